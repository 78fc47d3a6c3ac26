/**
 * The `env:` modules of one environment, resolved once when a session opens: what scripts may
 * import (names and exports, for validation), what the worker evaluates (pure modules' bundles),
 * the docs under `/std` and `/skills`, and how a script's call to a host module is answered.
 */
import { createRequire } from "node:module"
import { existsSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { Data, Effect, Either, JSONSchema } from "effect"
import { McpClients } from "../mcp/McpClients.js"
import type { McpMount } from "../mcp/McpMount.js"
import type { EnvironmentDefinition } from "../definitions/defineEnvironment.js"
import type { AdapterContext, AdapterFs, AdapterModule, PureModule, ToolsModule } from "../definitions/environmentModules.js"
import type { AnyTool, ToolRunContext } from "../definitions/defineTool.js"
import { packageLayout } from "../packageLayout.js"
import { pureModuleSource } from "./script/pureModule.js"
import type { ScriptRun } from "./script/scriptRun.js"
import type { ModuleExports } from "./script/validateScript.js"
import type { EnvironmentFs } from "./vfs/EnvironmentFs.js"
import { fsExports, fsModuleDoc } from "./vfs/fsModule.js"
import type { ModuleDoc } from "./vfs/generatedDocs.js"
import { memoryVfs } from "./vfs/Vfs.js"
import { environmentFs } from "./vfs/EnvironmentFs.js"

/** The modules of an environment, ready for scripts. */
export interface ResolvedModules {
  readonly exports: ReadonlyArray<ModuleExports>
  readonly docs: ReadonlyArray<ModuleDoc>
  readonly forWorker: ScriptRun["modules"]
  readonly adapters: ReadonlyMap<string, AdapterModule>
  readonly tools: ReadonlyMap<string, ReadonlyMap<string, HostTool>>
}

/** A function of a tools module: a Foundry tool, or a tool of one of the agent's MCP servers. */
export type HostTool =
  | { readonly _tag: "Foundry"; readonly tool: AnyTool }
  | { readonly _tag: "Mcp"; readonly mount: McpMount; readonly tool: string }

/** The tools module could not be resolved (its MCP server is not the agent's, or cannot be reached). */
export class ToolsModuleUnavailable extends Data.TaggedError("ToolsModuleUnavailable")<{ readonly message: string }> {}

/** What `env:test` offers test files (the worker implements it). */
const testDoc: ModuleDoc = {
  name: "test",
  kind: "test",
  description: "write tests for your scripts (run them with run_tests)",
  exports: ["test", "assert"],
  types: `export function test(name: string, body: () => void | Promise<void>): void
export interface Assert {
  (condition: unknown, message?: string): void
  equal(actual: unknown, expected: unknown, message?: string): void
  deepEqual(actual: unknown, expected: unknown, message?: string): void
}
export const assert: Assert
`,
  readme: "Test files are named `*.test.js` (or `.ts`); each calls `test(name, body)`; `run_tests` runs every test file under /scripts (or the path you give) and reports each test."
}

/** A TypeScript type for a JSON Schema, for the generated declarations of tools. */
const typeOf = (schema: unknown): string => {
  if (typeof schema !== "object" || schema === null) return "unknown"
  if ("enum" in schema && Array.isArray(schema.enum)) return schema.enum.map((value: unknown) => JSON.stringify(value)).join(" | ")
  if ("anyOf" in schema && Array.isArray(schema.anyOf)) return schema.anyOf.map(typeOf).join(" | ")
  const type = "type" in schema ? schema.type : undefined
  if (type === "string" || type === "number" || type === "boolean" || type === "null") return type
  if (type === "integer") return "number"
  if (type === "array") return `Array<${"items" in schema ? typeOf(schema.items) : "unknown"}>`
  if (type === "object" && "properties" in schema && typeof schema.properties === "object" && schema.properties !== null) {
    const required = "required" in schema && Array.isArray(schema.required) ? schema.required : []
    const fields = Object.entries(schema.properties).map(([key, value]) => `${JSON.stringify(key)}${required.includes(key) ? "" : "?"}: ${typeOf(value)}`)
    return `{ ${fields.join("; ")} }`
  }
  return "unknown"
}

/** An MCP tool's name as a script imports it. */
const identifierOf = (name: string): string => {
  const cleaned = name.replace(/[^A-Za-z0-9_$]/g, "_")
  return /^[A-Za-z_$]/.test(cleaned) ? cleaned : `_${cleaned}`
}

/** A tools module's functions and their declarations; an MCP server's tools are listed from it. */
const toolsOf = Effect.fnUntraced(function*(module: ToolsModule, mounts: ReadonlyArray<McpMount>) {
  const functions = new Map<string, HostTool>(Object.entries(module.tools).map(([name, tool]) => [name, { _tag: "Foundry", tool }]))
  const types = Object.entries(module.tools).map(([name, tool]) =>
    `/** ${tool.description} */\nexport function ${name}(input: ${typeOf(JSONSchema.make(tool.input))}): Promise<${typeOf(JSONSchema.make(tool.output))}>\n`
  )
  if (module.mcp !== undefined) {
    const mount = mounts.find((candidate) => candidate.name === module.mcp)
    if (mount === undefined) {
      return yield* new ToolsModuleUnavailable({
        message: `env:${module.name} uses the MCP server "${module.mcp}", which the agent does not mount: add mcp: { ${module.mcp}: true } (or its declaration) to the agent`
      })
    }
    const listed = yield* Effect.flatMap(McpClients, (clients) => clients.tools(mount)).pipe(
      Effect.mapError((error) => new ToolsModuleUnavailable({ message: `env:${module.name}: ${error.message}` }))
    )
    for (const tool of listed) {
      const name = identifierOf(tool.name)
      if (functions.has(name)) continue
      functions.set(name, { _tag: "Mcp", mount, tool: tool.name })
      types.push(`/** ${tool.description ?? tool.name} (MCP server ${mount.name}); answers the tool's text */\nexport function ${name}(input: ${typeOf(tool.inputSchema)}): Promise<string>\n`)
    }
  }
  const doc: ModuleDoc = { name: module.name, kind: "tools", description: module.description, exports: [...functions.keys()], types: types.join("\n") }
  return { doc, functions }
})

/**
 * A package's `package.json`: resolved directly, or, for a package whose `exports` do not list it
 * (SheetJS's do not), found above its resolved entry point.
 */
const packageManifest = (from: string, dir: string): string => {
  const require = createRequire(join(dir, "package.json"))
  try {
    return require.resolve(`${from}/package.json`)
  } catch {
    let folder = dirname(require.resolve(from))
    for (;;) {
      const candidate = join(folder, "package.json")
      if (existsSync(candidate)) {
        const json: unknown = JSON.parse(readFileSync(candidate, "utf8"))
        if (typeof json === "object" && json !== null && "name" in json && json.name === from) return candidate
      }
      const parent = dirname(folder)
      if (parent === folder) throw new Error(`no package.json of ${from} above its entry point`)
      folder = parent
    }
  }
}

/** The declarations a manifest names: `types` (or `typings`), else those of its `exports["."]`. */
const typesField = (json: unknown): string | undefined => {
  if (typeof json !== "object" || json === null) return undefined
  if ("types" in json && typeof json.types === "string") return json.types
  if ("typings" in json && typeof json.typings === "string") return json.typings
  const main = "exports" in json && typeof json.exports === "object" && json.exports !== null && "." in json.exports ? json.exports["."] : undefined
  return typeof main === "object" && main !== null && "types" in main && typeof main.types === "string" ? main.types : undefined
}

/** The package's own declarations, when it ships one file of them. */
const packageTypes = (module: PureModule, resolveFrom: ReadonlyArray<string>): string => {
  for (const dir of resolveFrom) {
    try {
      const manifest = packageManifest(module.from, dir)
      const types = typesField(JSON.parse(readFileSync(manifest, "utf8")))
      const file = types === undefined ? undefined : join(dirname(manifest), types)
      if (file !== undefined && existsSync(file)) {
        return `// The declarations of ${module.from}; scripts may import only: ${module.pick.join(", ")}\n${readFileSync(file, "utf8")}`
      }
    } catch {
      // Not resolvable from here: try the next folder, else fall back to names only.
    }
  }
  return module.pick.map((name) => `export declare const ${name}: unknown\n`).join("")
}

const pureDoc = (module: PureModule, resolveFrom: ReadonlyArray<string>): ModuleDoc => ({
  name: module.name,
  kind: "pure",
  description: module.description,
  exports: module.pick,
  types: module.types ?? packageTypes(module, resolveFrom),
  ...(module.readme === undefined ? {} : { readme: module.readme })
})

/** An adapter's view of the gateway: failures thrown as errors with the gateway's message. */
export const adapterFs = (fs: EnvironmentFs): AdapterFs => {
  const orThrow = <A>(result: Either.Either<A, { readonly message: string }>): A => {
    if (Either.isLeft(result)) throw new Error(result.left.message)
    return result.right
  }
  return {
    readFile: (path) => orThrow(fs.readFile(path)),
    readText: (path) => orThrow(fs.readText(path)),
    writeFile: (path, content) => orThrow(fs.writeFile(path, content)),
    exists: (path) => fs.vfs.exists(path)
  }
}

/** The exports of an adapter, learnt by creating it once over an empty read-only tree. */
const adapterExports = (module: AdapterModule): ReadonlyArray<string> => {
  const probe = environmentFs(memoryVfs(), { readOnly: ["/"], limits: { maxFileBytes: 0, maxTotalBytes: 0 } })
  const context: AdapterContext = { runId: "", agent: "", instanceId: "", conversationId: "" }
  return Object.keys(module.create(adapterFs(probe), context))
}

const adapterDoc = (module: AdapterModule): ModuleDoc => ({
  name: module.name,
  kind: "adapter",
  description: module.description,
  exports: adapterExports(module),
  types: module.types,
  ...(module.readme === undefined ? {} : { readme: module.readme })
})

/** Resolves an environment's modules; pure modules are bundled (and cached) here. */
export const resolveModules = Effect.fn("environments.resolveModules")(function*(
  environment: EnvironmentDefinition,
  projectRoot: string,
  mounts: ReadonlyArray<McpMount>
) {
  const resolveFrom = [projectRoot, packageLayout.root]
  const docs: Array<ModuleDoc> = [fsModuleDoc, testDoc]
  const forWorker: Array<ScriptRun["modules"][number]> = [{ name: "fs", exports: fsExports, kind: "host" }]
  const adapters = new Map<string, AdapterModule>()
  const tools = new Map<string, ReadonlyMap<string, HostTool>>()
  for (const module of environment.modules) {
    if (module._tag === "ToolsModule") {
      const { doc, functions } = yield* toolsOf(module, mounts)
      docs.push(doc)
      forWorker.push({ name: module.name, exports: doc.exports, kind: "host" })
      tools.set(module.name, functions)
      continue
    }
    const doc = module._tag === "PureModule" ? pureDoc(module, resolveFrom) : adapterDoc(module)
    docs.push(doc)
    if (module._tag === "PureModule") {
      // A module that cannot be made fails the scripts that import it, not the environment's other verbs.
      const made = yield* Effect.either(pureModuleSource(module, projectRoot))
      forWorker.push(made._tag === "Right"
        ? { name: module.name, exports: module.pick, kind: "pure", source: made.right }
        : { name: module.name, exports: module.pick, kind: "pure", unavailable: made.left.message })
    } else {
      forWorker.push({ name: module.name, exports: doc.exports, kind: "host" })
      adapters.set(module.name, module)
    }
  }
  const resolved: ResolvedModules = {
    exports: docs.map((doc) => ({ name: doc.name, exports: doc.exports })),
    docs,
    forWorker,
    adapters,
    tools
  }
  return resolved
})

/** The context a tool called from a script runs with: the verb's, with a call id of its own. */
export const nestedToolContext = (context: Omit<ToolRunContext<unknown>, "idempotencyKey">, index: number): Omit<ToolRunContext<unknown>, "idempotencyKey"> => ({
  ...context,
  toolCallId: `${context.toolCallId}/${index}`,
  config: undefined
})
