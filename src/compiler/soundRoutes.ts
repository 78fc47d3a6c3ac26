/**
 * The part of a project that builds while some of its route files do not: what `foundry dev`
 * serves when it has no whole build to keep serving (at start, or while the build it serves is
 * itself such a part), so that one broken file does not take every route down with it.
 *
 * A route is served whole or not at all: an agent whose listed tool, subagent or environment is
 * left out is left out too (offering it without a tool its instructions count on would answer
 * wrongly rather than fail), and so is a schedule or playbook whose agent is left out, a playbook
 * whose instances are those with a capability left out, and an environment whose scripts import a
 * tool left out. Each route left out is a problem of its own, naming the file it waits for.
 */
import { Effect, Either } from "effect"
import type { AgentDefinition } from "../definitions/defineAgent.js"
import type { EnvironmentDefinition } from "../definitions/defineEnvironment.js"
import type { PlaybookDefinition } from "../definitions/definePlaybook.js"
import { discoverRoutes } from "../router/discover.js"
import type { ProjectConfig } from "../router/loadConfig.js"
import { RouteError, RouteErrors } from "../router/RouteError.js"
import { agentFoldersOf, classify, isProblem } from "../router/RoutePath.js"
import type { Route, RouteTable } from "../router/RouteTable.js"
import type { CompiledApp, LeftOutRoute } from "./CompiledApp.js"
import { compile } from "./compile.js"

/** A build of the routes that build, and one problem per file left out. */
export interface SoundBuild {
  readonly app: CompiledApp
  readonly problems: RouteErrors
}

/**
 * Builds the sound part of the project at `root`: its broken files left out, then what depends on
 * them, until the rest compiles. Fails as a whole build does when what is wrong is no route's
 * (the config's layers, a service no layer provides).
 */
export const loadSoundRoutes = Effect.fn("compiler.loadSoundRoutes")(function*(
  root: string,
  generation: number,
  config: ProjectConfig
) {
  const discovered = yield* discoverRoutes(root, generation, Either.right(config))
  const problems = [...discovered.errors]
  const leftOut = new Map<unknown, string>(discovered.invalid)
  let table = discovered.table
  // Each round leaves at least one route out, so there are at most as many rounds as routes.
  while (true) {
    const dependents = leaveOutDependents(table, leftOut)
    table = dependents.table
    problems.push(...dependents.problems)
    const compiled = yield* compile(table).pipe(
      Effect.map(Either.right),
      Effect.catchTag("RouteErrors", (errors) => Effect.succeed(Either.left(errors)))
    )
    if (Either.isRight(compiled)) {
      const built: SoundBuild = {
        app: { ...compiled.right, leftOut: leftOutRoutes(problems) },
        problems: new RouteErrors({ errors: problems })
      }
      return built
    }
    const broken = new Set(compiled.left.errors.map((error) => error.file))
    const before = routeCount(table)
    table = leaveOut(table, (route) => broken.has(route.file), leftOut)
    problems.push(...compiled.left.errors)
    if (routeCount(table) === before) return yield* new RouteErrors({ errors: problems })
  }
})

const routeCount = (table: RouteTable): number =>
  table.agents.length + table.tools.length + table.mcpServers.length + table.playbooks.length + table.schedules.length +
  table.environments.length

/**
 * `table` without the routes `out` picks, each definition recorded in `leftOut` with its file; ids
 * are no longer given for them, so nothing resolves to a route that is not served.
 */
const leaveOut = (
  table: RouteTable,
  out: (route: Route<object>) => boolean,
  leftOut: Map<unknown, string>
): RouteTable => {
  const keep = <R extends Route<object>>(routes: ReadonlyArray<R>): ReadonlyArray<R> =>
    routes.filter((route) => {
      if (!out(route)) return true
      leftOut.set(route.definition, route.file)
      return false
    })
  return {
    ...table,
    agents: keep(table.agents),
    tools: keep(table.tools),
    mcpServers: keep(table.mcpServers),
    playbooks: keep(table.playbooks),
    schedules: keep(table.schedules),
    environments: keep(table.environments),
    idOf: (definition) => leftOut.has(definition) ? undefined : table.idOf(definition)
  }
}

/** The first of `used` that is left out: the file it waits for. */
const awaited = (used: ReadonlyArray<unknown>, leftOut: ReadonlyMap<unknown, string>): string | undefined => {
  for (const definition of used) {
    const file = leftOut.get(definition)
    if (file !== undefined) return file
  }
  return undefined
}

/** What an agent uses: its tools, subagents and environment. */
const usedByAgent = (agent: AgentDefinition): ReadonlyArray<unknown> => [...agent.tools, ...agent.subagents, agent.environment]

/** What a playbook uses: its agent, and the capability whose instances take its events. */
const usedByPlaybook = (playbook: PlaybookDefinition): ReadonlyArray<unknown> => [
  playbook.agent,
  typeof playbook.instance === "object" && "installed" in playbook.instance ? playbook.instance.installed : undefined
]

/** What an environment uses: the tools its `defineTools` modules expose to scripts. */
const usedByEnvironment = (environment: EnvironmentDefinition): ReadonlyArray<unknown> =>
  environment.modules.flatMap((module) => module._tag === "ToolsModule" ? Object.values(module.tools) : [])

/** The routes left out, by kind and id, for the files of `problems` that are route files. */
const leftOutRoutes = (problems: ReadonlyArray<RouteError>): ReadonlyArray<LeftOutRoute> => {
  const files = problems.map((problem) => problem.file)
  const agentFolders = agentFoldersOf(files)
  const seen = new Set<string>()
  return problems.flatMap((problem) => {
    const route = classify(problem.file, agentFolders)
    if (route === undefined || isProblem(route) || seen.has(route.file)) return []
    seen.add(route.file)
    return [{ kind: route.kind, id: route.id, file: route.file, problem: problem.problem }]
  })
}

/** Leaves out, until none is left, every agent, schedule and playbook that uses a route left out. */
const leaveOutDependents = (table: RouteTable, leftOut: Map<unknown, string>) => {
  const problems: Array<RouteError> = []
  let current = table
  while (true) {
    const waiting = new Map<string, string>()
    const wait = (file: string, on: string | undefined) => {
      if (on !== undefined) waiting.set(file, on)
    }
    for (const route of current.agents) wait(route.file, awaited(usedByAgent(route.definition), leftOut))
    for (const route of current.playbooks) wait(route.file, awaited(usedByPlaybook(route.definition), leftOut))
    for (const route of current.schedules) wait(route.file, awaited([route.definition.agent], leftOut))
    for (const route of current.environments) wait(route.file, awaited(usedByEnvironment(route.definition), leftOut))
    if (waiting.size === 0) return { table: current, problems }
    for (const [file, awaited] of waiting) {
      problems.push(
        new RouteError({ file, problem: `not served: it uses ${awaited}, which does not build`, fix: `fix ${awaited}` })
      )
    }
    current = leaveOut(current, (route) => waiting.has(route.file), leftOut)
  }
}
