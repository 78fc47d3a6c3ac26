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
import { RouteError, RouteErrors } from "./RouteError.js"
import { loadConfig, type ProjectConfig } from "./loadConfig.js"
import { expectKind, loadDefault } from "./routeModule.js"
import { agentFoldersOf, classify, isProblem, listRouteFiles, type RouteFile } from "./RoutePath.js"
import type { Route, RouteTable, ToolRoute } from "./RouteTable.js"
import { validateDefinition } from "./validateDefinition.js"

/**
 * Discovers, loads and validates every route of the project at `root`, with its config (loaded
 * here unless the caller has already loaded it).
 */
export const discover = Effect.fn("router.discover")(function*(
  root: string,
  generation: number,
  preloaded?: Either.Either<ProjectConfig, RouteError>
) {
  const files = yield* Effect.sync(() => listRouteFiles(root))
  const agentFolders = agentFoldersOf(files)
  const errors: Array<RouteError> = []
  const routeFiles: Array<RouteFile> = []
  for (const file of files) {
    const classified = classify(file, agentFolders)
    if (classified === undefined) continue
    if (isProblem(classified)) errors.push(new RouteError(classified))
    else routeFiles.push(classified)
  }

  const byId = new Map<string, RouteFile>()
  const unique: Array<RouteFile> = []
  for (const route of routeFiles) {
    const key = `${route.kind}:${route.id}`
    const first = byId.get(key)
    if (first === undefined) {
      byId.set(key, route)
      unique.push(route)
    } else {
      errors.push(
        new RouteError({
          file: route.file,
          problem: `duplicate ${route.kind} id "${route.id}": ${first.file} has the same id`,
          fix: `rename or remove one of ${first.file} and ${route.file}`
        })
      )
    }
  }

  const loaded = yield* Effect.forEach(unique, (route) =>
    loadDefault(root, route.file, generation).pipe(
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
  if (loadedConfig._tag === "Left") errors.push(loadedConfig.left)

  const ids = new Map<object, string>()
  // Definitions whose own file is already reported: what imports them is not broken too.
  const reported = new Set<unknown>()
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
      reported.add(value)
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

  for (const route of [...schedules, ...playbooks]) {
    const agent = route.definition.agent
    if (!ids.has(agent) && !reported.has(agent) && kindOf(agent) === "agent") {
      errors.push(
        new RouteError({
          file: route.file,
          problem: "agent is an agent that is not a route of this project",
          fix: "import the agent from its file under agents/ (agents/<path>/agent.ts)"
        })
      )
    }
  }

  if (errors.length > 0) return yield* new RouteErrors({ errors })
  const table: RouteTable = {
    root,
    agents,
    tools,
    mcpServers,
    playbooks,
    schedules,
    environments,
    config,
    configFile,
    idOf: (definition) => ids.get(definition)
  }
  return table
})

const isAgent = (value: object): value is AgentDefinition => kindOf(value) === "agent"
const isTool = (value: object): value is AnyTool => kindOf(value) === "tool"
const isMcpServer = (value: object): value is McpServerDefinition => kindOf(value) === "mcp"
const isPlaybook = (value: object): value is PlaybookDefinition => kindOf(value) === "playbook"
const isSchedule = (value: object): value is ScheduleDefinition => kindOf(value) === "schedule"
const isEnvironment = (value: object): value is EnvironmentDefinition => kindOf(value) === "environment"
