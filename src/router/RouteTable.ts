/**
 * The route table: every route of a project, loaded and validated, with the identity of each
 * definition value so that imported relationships resolve to ids.
 */
import type { AgentDefinition } from "../definitions/defineAgent.js"
import type { ConfigDefinition } from "../definitions/defineConfig.js"
import type { EnvironmentDefinition } from "../definitions/defineEnvironment.js"
import type { McpServerDefinition } from "../definitions/defineMcpServer.js"
import type { PlaybookDefinition } from "../definitions/definePlaybook.js"
import type { ScheduleDefinition } from "../definitions/defineSchedule.js"
import type { AnyTool } from "../definitions/defineTool.js"

/** One route: its id, its file (relative to the project folder) and its definition. */
export interface Route<D> {
  readonly id: string
  readonly file: string
  readonly definition: D
}

/** A tool route; `agent` is the id of the agent whose folder holds it, if any. */
export interface ToolRoute extends Route<AnyTool> {
  readonly agent: string | undefined
}

/** Every route of a project. */
export interface RouteTable {
  /** The project folder, absolute. */
  readonly root: string
  readonly agents: ReadonlyArray<Route<AgentDefinition>>
  readonly tools: ReadonlyArray<ToolRoute>
  /** The MCP servers of the catalogue (`mcp/<name>.ts`). */
  readonly mcpServers: ReadonlyArray<Route<McpServerDefinition>>
  readonly playbooks: ReadonlyArray<Route<PlaybookDefinition>>
  readonly schedules: ReadonlyArray<Route<ScheduleDefinition>>
  readonly environments: ReadonlyArray<Route<EnvironmentDefinition>>
  readonly config: ConfigDefinition
  /** The config file, relative, or `undefined` when the project has none. */
  readonly configFile: string | undefined
  /** The route id of a definition value, by identity. */
  readonly idOf: (definition: object) => string | undefined
}
