/**
 * Discovery: a project folder becomes a `RouteTable`, or every broken route file is reported at
 * once (`RouteErrors`). Loading goes through `importRouteModule`, so each call with a new
 * `generation` sees the files as they are now.
 */
import { Effect, Either } from "effect"
import type { AgentDefinition } from "../definitions/defineAgent.js"
import { defineConfig } from "../definitions/defineConfig.js"
import type { EnvironmentDefinition } from "../definitions/defineEnvironment.js"
import type { McpServerDefinition } from "../definitions/defineMcpServer.js"
import type { PlaybookDefinition } from "../definitions/definePlaybook.js"
import type { ScheduleDefinition } from "../definitions/defineSchedule.js"
import type { AnyTool } from "../definitions/defineTool.js"
import { kindOf } from "../definitions/RouteKind.js"
import { waitingFor } from "./BuildProgress.js"
import { RouteError, RouteErrors } from "./RouteError.js"
import { loadConfig, type ProjectConfig } from "./loadConfig.js"
import { expectKind, loadDefault } from "./routeModule.js"
import { listRouteFiles, type RouteFile, routeFilesOf } from "./RoutePath.js"
import type { Route, RouteTable, ToolRoute } from "./RouteTable.js"
import { validateDefinition } from "./validateDefinition.js"

/**
 * Discovers, loads and validates every route of the project at `root`, with its config (loaded
 * here unless the caller has already loaded it); fails with every broken file at once.
 */
export const discover = Effect.fn("router.discover")(function*(
  root: string,
  generation: number,
  preloaded?: Either.Either<ProjectConfig, RouteError>
) {
  const { errors, table } = yield* discoverRoutes(root, generation, preloaded)
  if (errors.length > 0) return yield* new RouteErrors({ errors })
  return table
})

/** What discovery found: the routes that load and are valid, and what is wrong with the others. */
export interface Discovered {
  /** The sound routes; a schedule or playbook whose agent is no route is left out. */
  readonly table: RouteTable
  /** One error per broken file. */
  readonly errors: ReadonlyArray<RouteError>
  /** The definitions of files that loaded but are not valid, with their files: what uses them is broken too. */
  readonly invalid: ReadonlyMap<unknown, string>
}

/** Discovers the routes of the project at `root`, broken files reported beside the sound ones. */
export const discoverRoutes = Effect.fnUntraced(function*(
  root: string,
  generation: number,
  preloaded?: Either.Either<ProjectConfig, RouteError>
) {
  const found = routeFilesOf(yield* Effect.sync(() => listRouteFiles(root)))
  const misnamed = found.problems.map((problem) => new RouteError(problem))
  const loaded = yield* Effect.forEach(found.routes, (route) =>
    Effect.zipRight(waitingFor(`${route.file} to load`), loadDefault(root, route.file, generation)).pipe(
      Effect.flatMap((value) => {
        const wrongKind = expectKind(route.file, route.kind, value)
        return wrongKind === undefined ? Effect.succeed({ route, value }) : Effect.fail(wrongKind)
      }),
      Effect.either
    ))
  const loadedConfig = preloaded ?? (yield* loadConfig(root, generation).pipe(
    Effect.map(Either.right),
    Effect.catchTag("RouteError", (error) => Effect.succeed(Either.left(error)))
  ))
  const { config, configFile } = loadedConfig._tag === "Right"
    ? loadedConfig.right
    : { config: defineConfig({}), configFile: loadedConfig.left.file }
  const routes = byKind(loaded)
  const withoutAgent = unknownAgents([...routes.schedules, ...routes.playbooks], routes.ids, routes.reported)
  const errors = [
    ...misnamed,
    ...(loadedConfig._tag === "Left" ? [loadedConfig.left] : []),
    ...routes.errors,
    ...withoutAgent
  ]
  const orphaned = new Set(withoutAgent.map((error) => error.file))
  const { agents, environments, ids, mcpServers, tools } = routes
  const table: RouteTable = {
    root,
    agents,
    tools,
    mcpServers,
    playbooks: routes.playbooks.filter((route) => !orphaned.has(route.file)),
    schedules: routes.schedules.filter((route) => !orphaned.has(route.file)),
    environments,
    config,
    configFile,
    idOf: (definition) => ids.get(definition)
  }
  const discovered: Discovered = { table, errors, invalid: routes.reported }
  return discovered
})

/**
 * The loaded route files' definitions by kind, with each definition's id; a file that failed to
 * load or whose definition is not valid is reported, and its definition kept in `reported` with its file.
 */
const byKind = (loaded: ReadonlyArray<Either.Either<{ readonly route: RouteFile; readonly value: unknown }, RouteError>>) => {
  const errors: Array<RouteError> = []
  const ids = new Map<object, string>()
  const reported = new Map<unknown, string>()
  const agents: Array<Route<AgentDefinition>> = []
  const tools: Array<ToolRoute> = []
  const mcpServers: Array<Route<McpServerDefinition>> = []
  const playbooks: Array<Route<PlaybookDefinition>> = []
  const schedules: Array<Route<ScheduleDefinition>> = []
  const environments: Array<Route<EnvironmentDefinition>> = []
  for (const result of loaded) {
    if (result._tag === "Left") {
      errors.push(result.left)
      continue
    }
    const { route, value } = result.right
    const problems = validateDefinition(route.file, route.kind, value)
    if (problems.length > 0) {
      reported.set(value, route.file)
      errors.push(
        new RouteError({
          file: route.file,
          problem: problems.map((p) => p.problem).join("; "),
          fix: problems.map((p) => p.fix).join("; ")
        })
      )
      continue
    }
    if (typeof value !== "object" || value === null) continue
    ids.set(value, route.id)
    const entry = { id: route.id, file: route.file }
    if (isAgent(value)) agents.push({ ...entry, definition: value })
    else if (isTool(value)) tools.push({ ...entry, definition: value, agent: route.agentFolder })
    else if (isMcpServer(value)) mcpServers.push({ ...entry, definition: value })
    else if (isPlaybook(value)) playbooks.push({ ...entry, definition: value })
    else if (isSchedule(value)) schedules.push({ ...entry, definition: value })
    else if (isEnvironment(value)) environments.push({ ...entry, definition: value })
  }
  return { agents, tools, mcpServers, playbooks, schedules, environments, ids, reported, errors }
}

/**
 * Schedules and playbooks whose agent is no route of the project. An agent whose own file is
 * already reported (`reported`) is not reported again here: what imports it is not broken too.
 */
const unknownAgents = (
  routes: ReadonlyArray<Route<ScheduleDefinition> | Route<PlaybookDefinition>>,
  ids: ReadonlyMap<object, string>,
  reported: ReadonlyMap<unknown, string>
): ReadonlyArray<RouteError> =>
  routes.flatMap((route) => {
    const agent = route.definition.agent
    return !ids.has(agent) && !reported.has(agent) && kindOf(agent) === "agent"
      ? [
        new RouteError({
          file: route.file,
          problem: "agent is not a route of this project: it is not the default export of an agents/<path>/agent.ts",
          fix: "import the agent from its file under agents/ (agents/<path>/agent.ts)"
        })
      ]
      : []
  })

const isAgent = (value: object): value is AgentDefinition => kindOf(value) === "agent"
const isTool = (value: object): value is AnyTool => kindOf(value) === "tool"
const isMcpServer = (value: object): value is McpServerDefinition => kindOf(value) === "mcp"
const isPlaybook = (value: object): value is PlaybookDefinition => kindOf(value) === "playbook"
const isSchedule = (value: object): value is ScheduleDefinition => kindOf(value) === "schedule"
const isEnvironment = (value: object): value is EnvironmentDefinition => kindOf(value) === "environment"
