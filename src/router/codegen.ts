/**
 * Generated files under `.foundry/`: `manifest.json` (every route, for tools and the inspector),
 * `routes.d.ts` (route ids -> definition types) and `requirements-check.ts` (a compile-time check
 * that every service a tool requires is provided by a layer in `foundry.config.ts`). Never edited
 * by hand.
 */
import { randomUUID } from "node:crypto"
import { FileSystem, Path } from "@effect/platform"
import { Effect, JSONSchema, type Schema } from "effect"
import { modelNameOf, modelsOf, subagentToolName } from "../definitions/defineAgent.js"
import type { RouteTable } from "./RouteTable.js"

/** One route as the manifest lists it. */
export interface ManifestRoute {
  readonly kind: "agent" | "tool" | "mcp" | "playbook" | "schedule" | "environment"
  readonly id: string
  readonly file: string
  readonly description?: string
  readonly tools?: ReadonlyArray<string>
  /** The agents an agent delegates to, each through its tool `ask-<name>`. */
  readonly subagents?: ReadonlyArray<{ readonly agent: string; readonly tool: string }>
  readonly requires?: ReadonlyArray<string>
  /** Whether a tool's calls wait for a person: every call, or those whose input says so. */
  readonly approval?: "always" | "by input"
  readonly agent?: string
  readonly environment?: string
  readonly model?: string
  readonly schedules?: ReadonlyArray<string>
  readonly playbooks?: ReadonlyArray<string>
  readonly timing?: Readonly<Record<string, string>>
  readonly webhook?: string
  /** The internal event a playbook listens for. */
  readonly event?: string
  /** A tool's input, as JSON Schema. */
  readonly input?: unknown
  /** Set for a shared tool or MCP server that instances install one by one. */
  readonly installable?: true
  /** The instance context an agent declares, as JSON Schema. */
  readonly context?: unknown
}

/** The manifest: what the project is made of, as data. */
export interface Manifest {
  readonly generatedBy: "foundry"
  readonly config: string | null
  readonly routes: ReadonlyArray<ManifestRoute>
}

// Some schemas (declarations without a JSON Schema annotation) have no JSON Schema; the
// manifest then leaves that field out rather than failing the build.
const jsonSchemaOf = <A, I>(schema: Schema.Schema<A, I>): JSONSchema.JsonSchema7Root | undefined => {
  try {
    return JSONSchema.make(schema)
  } catch {
    return undefined
  }
}

const inputSchemaOf = <A, I>(schema: Schema.Schema<A, I>): { readonly input?: unknown } => {
  const input = jsonSchemaOf(schema)
  return input === undefined ? {} : { input }
}

const contextSchemaOf = <A, I>(schema: Schema.Schema<A, I> | undefined): { readonly context?: unknown } => {
  const context = schema === undefined ? undefined : jsonSchemaOf(schema)
  return context === undefined ? {} : { context }
}

const toolName = (table: RouteTable, tool: object): string => table.idOf(tool) ?? "(inline tool)"

const subagentOf = (table: RouteTable) => (agent: object): { readonly agent: string; readonly tool: string } => {
  const id = table.idOf(agent) ?? "(inline agent)"
  return { agent: id, tool: subagentToolName(id) }
}

/** The manifest of a route table. */
export const manifestOf = (table: RouteTable): Manifest => ({
  generatedBy: "foundry",
  config: table.configFile ?? null,
  routes: [
    ...table.agents.map((route): ManifestRoute => ({
      kind: "agent",
      id: route.id,
      file: route.file,
      description: route.definition.description,
      // Fallback models in the order they are tried.
      model: modelsOf(route.definition).map(modelNameOf).join(" -> "),
      tools: route.definition.tools.map((tool) => toolName(table, tool)),
      ...(route.definition.subagents.length === 0 ? {} : { subagents: route.definition.subagents.map(subagentOf(table)) }),
      ...(route.definition.environment === undefined
        ? {}
        : { environment: table.idOf(route.definition.environment) ?? "(inline environment)" }),
      schedules: table.schedules.filter((s) => s.definition.agent === route.definition).map((s) => s.id),
      playbooks: table.playbooks.filter((p) => p.definition.agent === route.definition).map((p) => p.id),
      ...contextSchemaOf(route.definition.context)
    })),
    ...table.tools.map((route): ManifestRoute => ({
      kind: "tool",
      id: route.id,
      file: route.file,
      description: route.definition.description,
      requires: route.definition.requires.map((tag) => tag.key),
      ...(route.definition.approval === "never" ? {} : { approval: route.definition.approval === "always" ? "always" : "by input" }),
      ...inputSchemaOf(route.definition.input),
      ...(route.agent === undefined ? {} : { agent: route.agent }),
      ...(route.definition.installable === undefined ? {} : { installable: true })
    })),
    ...table.mcpServers.map((route): ManifestRoute => ({
      kind: "mcp",
      id: route.id,
      file: route.file,
      description: route.definition.description,
      installable: true
    })),
    ...table.schedules.map((route): ManifestRoute => ({
      kind: "schedule",
      id: route.id,
      file: route.file,
      agent: table.idOf(route.definition.agent) ?? "",
      timing: { ...route.definition.timing }
    })),
    ...table.playbooks.map((route): ManifestRoute => ({
      kind: "playbook",
      id: route.id,
      file: route.file,
      agent: table.idOf(route.definition.agent) ?? "",
      ...(route.definition.on._tag === "Webhook"
        ? { webhook: `/hooks/${route.definition.on.name}` }
        : { event: route.definition.on.name })
    })),
    ...table.environments.map((route): ManifestRoute => ({
      kind: "environment",
      id: route.id,
      file: route.file,
      description: route.definition.description
    }))
  ]
})

const importPath = (file: string): string => `../${file.replace(/\.(m?)ts$/, ".$1js")}`

const identifier = (kind: string, index: number): string => `${kind}_${index}`

const entries = (kind: string, routes: ReadonlyArray<{ readonly id: string; readonly file: string }>) =>
  routes.map((route, index) => ({ ...route, name: identifier(kind, index) }))

/** The text of `.foundry/routes.d.ts` for a route table. */
export const routeTypesOf = (table: RouteTable): string => {
  // Each interface with the words its doc comment uses.
  const groups = [
    { name: "Agents", noun: "agents", routes: entries("agent", table.agents) },
    { name: "Tools", noun: "tools", routes: entries("tool", table.tools) },
    { name: "McpServers", noun: "MCP servers", routes: entries("mcp", table.mcpServers) },
    { name: "Playbooks", noun: "playbooks", routes: entries("playbook", table.playbooks) },
    { name: "Schedules", noun: "schedules", routes: entries("schedule", table.schedules) },
    { name: "Environments", noun: "environments", routes: entries("environment", table.environments) }
  ]
  const all = groups.flatMap((group) => group.routes)
  const lines = [
    "// Generated by foundry from the project's route files. Do not edit: it is rewritten on every build.",
    `import type { ProvidedBy, ToolRequirements } from "foundry"`,
    ...all.map((route) => `import type ${route.name} from ${JSON.stringify(importPath(route.file))}`),
    table.configFile === undefined ? "" : `import type config from ${JSON.stringify(importPath(table.configFile))}`,
    "",
    ...groups.flatMap(({ name, noun, routes }) => [
      `/** The ${noun} of this project, by route id. */`,
      `export interface ${name} {`,
      ...routes.map((route) => `  ${JSON.stringify(route.id)}: typeof ${route.name}`),
      "}",
      ""
    ]),
    "/** Every route id of this project, by kind. */",
    "export type AgentId = keyof Agents",
    "",
    "/** Services some tool requires that no layer in foundry.config.ts provides (`never` when all are). */",
    `export type MissingServices = Exclude<ToolRequirements<Tools[keyof Tools]>, ${table.configFile === undefined ? "never" : "ProvidedBy<typeof config>"}>`,
    ""
  ]
  return lines.join("\n")
}

/**
 * The text of `.foundry/requirements-check.ts`: a type error there names each service a tool
 * requires that no layer provides. It is a `.ts` file because checkers skip `.d.ts` files.
 */
export const requirementsCheck = [
  "// Generated by foundry. Do not edit. `foundry check` type-checks this file.",
  `import type { MissingServices } from "./routes.js"`,
  "",
  "type RequireAllProvided<Missing extends never> = Missing",
  "/** An error here names a service a tool requires and no layer provides: add its layer to `layers` in foundry.config.ts. */",
  "export type RequirementsCheck = RequireAllProvided<MissingServices>",
  ""
].join("\n")

/** Writes `.foundry/manifest.json` and `.foundry/routes.d.ts` for a route table. */
export const writeGenerated = Effect.fn("router.writeGenerated")(function*(table: RouteTable) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const folder = path.join(table.root, ".foundry")
  yield* fs.makeDirectory(folder, { recursive: true })
  yield* writeIfChanged(path.join(folder, "manifest.json"), `${JSON.stringify(manifestOf(table), null, 2)}\n`)
  yield* writeIfChanged(path.join(folder, "routes.d.ts"), routeTypesOf(table))
  yield* writeIfChanged(path.join(folder, "requirements-check.ts"), requirementsCheck)
})

/**
 * Writes a generated file unless it holds `content` already (rewriting an unchanged file would wake
 * file watchers and editors for nothing), whole: written beside it and renamed over it, so that a
 * check running at the same time (`foundry dev`'s and `foundry check`'s) never reads it half
 * written; tsc takes a half-written tsconfig for an empty one, and passes without a route file.
 */
export const writeIfChanged = Effect.fn("router.writeIfChanged")(function*(file: string, content: string) {
  const fs = yield* FileSystem.FileSystem
  const current = yield* fs.readFileString(file).pipe(Effect.orElseSucceed(() => ""))
  if (current === content) return
  const temporary = `${file}.${randomUUID()}.tmp`
  yield* fs.writeFileString(temporary, content)
  yield* fs.rename(temporary, file)
})
