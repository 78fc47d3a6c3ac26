/**
 * The `env:` modules of one environment, made when a session opens: what scripts may import
 * (names and exports, for validation), what the worker evaluates (pure modules' bundles), the docs
 * under `/std` and `/skills`, and how a script's call to a host module is answered. A tools module
 * of an MCP server offers what that server listed, put in as the session reaches it
 * (`sessionModules.ts`).
 */
import { createRequire } from "node:module"
import { existsSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import { Data, Effect, Either, JSONSchema } from "effect"
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

/** The tools module cannot be used (its MCP server is not the agent's, or cannot be reached). */
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

/** What an MCP server listed for a tools module; or, while it could not be reached, why not. */
export type McpListing = Either.Either<ReadonlyArray<Tool>, string>

/** The tools modules of `environment` that list one of the agent's MCP servers, with its mount. */
export const mcpModulesOf = (environment: EnvironmentDefinition, mounts: ReadonlyArray<McpMount>) =>
  Effect.forEach(environment.modules.filter((module): module is ToolsModule => module._tag === "ToolsModule"), (module) => {
    if (module.mcp === undefined) return Effect.succeed([])
    const mount = mounts.find((candidate) => candidate.name === module.mcp)
    return mount === undefined
      ? new ToolsModuleUnavailable({
        message: `env:${module.name} uses the MCP server "${module.mcp}", which the agent does not mount: add mcp: { ${module.mcp}: true } (or its declaration) to the agent`
      })
      : Effect.succeed([{ name: module.name, mount }])
  }).pipe(Effect.map((found) => found.flat()))

/**
 * A tools module's functions and their declarations, an MCP server's tools from what it listed.
 * While its server is not reached, the module offers its Foundry tools only and says why.
 */
const toolsOf = (module: ToolsModule, mount: McpMount | undefined, listing: McpListing | undefined) => {
  const functions = new Map<string, HostTool>(Object.entries(module.tools).map(([name, tool]) => [name, { _tag: "Foundry", tool }]))
  const types = Object.entries(module.tools).map(([name, tool]) =>
    `/** ${tool.description} */\nexport function ${name}(input: ${typeOf(JSONSchema.make(tool.input))}): Promise<${typeOf(JSONSchema.make(tool.output))}>\n`
  )
  if (mount !== undefined && listing !== undefined && Either.isLeft(listing)) {
    types.unshift(`// The tools of MCP server ${mount.name} are not known yet: ${listing.left}.\n// A script that imports env:${module.name} connects to it again when it runs.\n`)
  }
  if (mount !== undefined && listing !== undefined && Either.isRight(listing)) {
    for (const tool of listing.right) {
      const name = identifierOf(tool.name)
      if (functions.has(name)) continue
      functions.set(name, { _tag: "Mcp", mount, tool: tool.name })
      types.push(`/** ${tool.description ?? tool.name} (MCP server ${mount.name}); answers the tool's text */\nexport function ${name}(input: ${typeOf(tool.inputSchema)}): Promise<string>\n`)
    }
  }
  const doc: ModuleDoc = { name: module.name, kind: "tools", description: module.description, exports: [...functions.keys()], types: types.join("\n") }
  return { doc, functions }
}

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

/** One module as scripts see it. */
interface Part {
  readonly doc: ModuleDoc
  /** What the worker is given (env:test is the worker's own). */
  readonly worker?: ScriptRun["modules"][number]
  readonly adapter?: AdapterModule
  readonly tools?: ReadonlyMap<string, HostTool>
  /** Its exports are not known yet (its MCP server was not reached): names imported from it are not checked. */
  readonly exportsUnknown?: true
}

/**
 * Makes an environment's modules (pure modules are bundled, and cached, here); what its tools
 * modules' MCP servers listed is put in by the function it answers, as often as that changes.
 */
export const resolveModules = Effect.fn("environments.resolveModules")(function*(
  environment: EnvironmentDefinition,
  projectRoot: string,
  mounts: ReadonlyArray<McpMount>
) {
  const resolveFrom = [projectRoot, packageLayout.root]
  const fixed = (part: Part) => (_listings: ReadonlyMap<string, McpListing>): Part => part
  const parts: Array<(listings: ReadonlyMap<string, McpListing>) => Part> = [
    fixed({ doc: fsModuleDoc, worker: { name: "fs", exports: fsExports, kind: "host" } }),
    fixed({ doc: testDoc })
  ]
  for (const module of environment.modules) {
    if (module._tag === "ToolsModule") {
      const mount = module.mcp === undefined ? undefined : mounts.find((candidate) => candidate.name === module.mcp)
      parts.push((listings) => {
        const listing = listings.get(module.name)
        const { doc, functions } = toolsOf(module, mount, listing)
        const unreached = mount !== undefined && (listing === undefined || Either.isLeft(listing))
        // A script that names it at run time (`require(name)`) is told why, as one that imports it is.
        const why = `env:${module.name} is not available: ${listing !== undefined && Either.isLeft(listing) ? listing.left : "its MCP server was not reached yet"}; import it to connect again`
        return {
          doc,
          worker: { name: module.name, exports: doc.exports, kind: "host", ...(unreached ? { unavailable: why } : {}) },
          tools: functions,
          ...(unreached ? { exportsUnknown: true } : {})
        }
      })
      continue
    }
    if (module._tag === "PureModule") {
      // A module that cannot be made fails the scripts that import it, not the environment's other verbs.
      const made = yield* Effect.either(pureModuleSource(module, projectRoot))
      parts.push(fixed({
        doc: pureDoc(module, resolveFrom),
        worker: made._tag === "Right"
          ? { name: module.name, exports: module.pick, kind: "pure", source: made.right }
          : { name: module.name, exports: module.pick, kind: "pure", unavailable: made.left.message }
      }))
    } else {
      const doc = adapterDoc(module)
      parts.push(fixed({ doc, worker: { name: module.name, exports: doc.exports, kind: "host" }, adapter: module }))
    }
  }
  return (listings: ReadonlyMap<string, McpListing>): ResolvedModules => {
    const made = parts.map((part) => part(listings))
    return {
      exports: made.map(({ doc, exportsUnknown }) => ({ name: doc.name, exports: doc.exports, ...(exportsUnknown ? { exportsUnknown } : {}) })),
      docs: made.map((part) => part.doc),
      forWorker: made.flatMap((part) => part.worker === undefined ? [] : [part.worker]),
      adapters: new Map(made.flatMap((part) => part.adapter === undefined ? [] : [[part.doc.name, part.adapter]])),
      tools: new Map(made.flatMap((part) => part.tools === undefined ? [] : [[part.doc.name, part.tools]]))
    }
  }
})

/** The context a tool called from a script runs with: the verb's, with a call id of its own. */
export const nestedToolContext = (context: Omit<ToolRunContext<unknown>, "idempotencyKey">, index: number): Omit<ToolRunContext<unknown>, "idempotencyKey"> => ({
  ...context,
  toolCallId: `${context.toolCallId}/${index}`,
  config: undefined
})
