/**
 * What the compiler makes of a route table: registries the runtime reads, and the services the
 * config's layers built. The runtime only ever sees this, never route files.
 */
import type { Context } from "effect"
import type { AgentDefinition, AnySchema } from "../definitions/defineAgent.js"
import type { EnvironmentDefinition } from "../definitions/defineEnvironment.js"
import type { McpServerDefinition } from "../definitions/defineMcpServer.js"
import type { CapabilityKind } from "../durable/records.js"
import type { AnyTool } from "../definitions/defineTool.js"
import type { PermissionRule } from "../definitions/configFields.js"
import type { McpMount } from "../mcp/McpMount.js"
import type { ToolSpec } from "../models/Model.js"
import type { RouteTable } from "../router/RouteTable.js"

/** Where an agent's environment comes from: its route and the build it belongs to. */
export interface EnvironmentRoute {
  readonly environmentId: string
  readonly environment: EnvironmentDefinition
  readonly root: string
  readonly release: string
  /** The agent's MCP servers, which a tools module may expose to scripts. */
  readonly mounts: ReadonlyArray<McpMount>
  /** The config's permission rules: a tool a script calls is let through, asked about or denied as the model's calls are. */
  readonly permissions: ReadonlyArray<PermissionRule>
  /** The name the model would call each of the tools modules' Foundry tools by, which permission rules match. */
  readonly toolNames: ReadonlyMap<AnyTool, string>
}

/** A tool as an agent offers it to the model. */
export interface CompiledTool {
  readonly id: string
  /** The name the model calls it by. */
  readonly name: string
  readonly file: string | undefined
  readonly definition: AnyTool
  readonly spec: ToolSpec
  /** For a subagent's tool: the agent it delegates to (the engine runs it as a child run). */
  readonly subagent?: string
  /**
   * For the tools the engine runs itself: the timer tools an agent opts into, and an
   * environment's `view_image` (whose answer carries an image, offered only to models that see).
   */
  readonly builtin?: "schedule" | "schedules" | "sleep" | "view_image"
  /** For an environment's verbs: which environment, of which build. */
  readonly environment?: EnvironmentRoute
}

/** An agent, its tools resolved by model-facing name. */
export interface CompiledAgent {
  readonly id: string
  readonly file: string
  readonly definition: AgentDefinition
  readonly tools: ReadonlyMap<string, CompiledTool>
  /** The MCP servers whose tools it also offers (listed while it runs: they may change). */
  readonly mcp: ReadonlyArray<McpMount>
}

/**
 * Something an instance can install: a shared tool or a catalogue MCP server that declares
 * `installable`. Keyed in `CompiledApp.capabilities` by `capabilityKey(kind, id)`.
 */
export type Capability =
  | {
    readonly kind: "tool"
    readonly id: string
    readonly file: string
    readonly description: string
    readonly config: AnySchema
    readonly tool: CompiledTool
  }
  | {
    readonly kind: "mcp"
    readonly id: string
    readonly file: string
    readonly description: string
    readonly config: AnySchema
    readonly server: McpServerDefinition
    /** The name a run mounts it under (`mountNameOf` its id), which the build checked can name a server. */
    readonly mount: string
  }

/**
 * The name an installed MCP server of the catalogue is mounted under: the last segment of its id
 * (`sales/crm` mounts as `crm`), the prefix of its tools' names for models.
 */
export const mountNameOf = (id: string): string => id.split("/").pop() ?? id

/** How capabilities are keyed: `tool:<id>`, `mcp:<id>`. */
export const capabilityKey = (kind: CapabilityKind, id: string): string => `${kind}:${id}`

/** A compiled project. */
export interface CompiledApp {
  readonly table: RouteTable
  readonly agents: ReadonlyMap<string, CompiledAgent>
  /** What instances can install, by `capabilityKey`. */
  readonly capabilities: ReadonlyMap<string, Capability>
  /** What the config's layers provide; every tool runs with these. */
  readonly services: Context.Context<unknown>
  /**
   * Which build of the project this is, for every event it records: in development `dev-<hash>`,
   * a short hash of the route files' and the config file's contents (see `releaseOf`).
   */
  readonly release: string
  /**
   * The routes a build of only the sound part of a project left out (`foundry dev` while some
   * files do not build; see compiler/soundRoutes.ts), each with why; absent for a whole build.
   */
  readonly leftOut?: ReadonlyArray<LeftOutRoute>
}

/** A route that the serving build leaves out, and why. */
export interface LeftOutRoute {
  readonly kind: "agent" | "tool" | "mcp" | "playbook" | "schedule" | "environment"
  readonly id: string
  readonly file: string
  readonly problem: string
}

/** The routes of `kind` the build leaves out; none for a whole build. */
export const leftOutOf = (app: Pick<CompiledApp, "leftOut">, kind: LeftOutRoute["kind"]): ReadonlyArray<LeftOutRoute> =>
  (app.leftOut ?? []).filter((route) => route.kind === kind)

/** Why the build leaves out agent `agent`, when it does (`foundry dev` serving the part of a project that builds). */
export const leftOutAgent = (app: CompiledApp, agent: string): LeftOutRoute | undefined =>
  leftOutOf(app, "agent").find((route) => route.id === agent)

/**
 * Why an event may not be delivered now: the playbooks the build leaves out, any of which may
 * listen for it (one that did not load cannot say what it listens for); `undefined` when none is.
 */
export const playbooksLeftOut = (app: CompiledApp): string | undefined => {
  const waiting = leftOutOf(app, "playbook")
  return waiting.length === 0
    ? undefined
    : `the project serves only the routes that build, and leaves out ${waiting.map((route) => route.file).join(", ")}`
}
