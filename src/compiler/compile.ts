/**
 * The compiler: a route table becomes a `CompiledApp`. Tools get model-facing names and JSON
 * Schemas, and the config's layers are built once so that every service a tool requires is known
 * to be there before the first run.
 */
import { Cause, Context, Effect, Layer, type Scope } from "effect"
import { type AgentDefinition, timerToolsOf } from "../definitions/defineAgent.js"
import type { EnvironmentDefinition } from "../definitions/defineEnvironment.js"
import type { AnyTool } from "../definitions/defineTool.js"
import { environmentTools } from "../environments/verbs.js"
import { mountsOf } from "../mcp/McpMount.js"
import { waitingFor } from "../router/BuildProgress.js"
import { RouteError, RouteErrors } from "../router/RouteError.js"
import type { Route, RouteTable } from "../router/RouteTable.js"
import { validateDefinition } from "../router/validateDefinition.js"
import { type Capability, capabilityKey, type CompiledAgent, type CompiledApp, type CompiledTool, mountNameOf } from "./CompiledApp.js"
import { LayerBuildError, MissingService, MissingServices } from "./CompileError.js"
import { compileTool, renameFix, subagentTool, unofferable } from "./compiledTool.js"
import { releaseOf } from "./projectRelease.js"
import { missingFolder, missingPackages, uninstallable, unmountable } from "./routeChecks.js"
import { timerTools } from "./timerTools.js"

/**
 * Builds the config's layers (in the scope the build runs in), telling the build's watcher which
 * have not finished yet and which services the tools require (`required`) none of the finished
 * ones provides: a layer that never finishes is named.
 */
const buildServices = (table: RouteTable, required: ReadonlyArray<string>): Effect.Effect<Context.Context<unknown>, LayerBuildError, Scope.Scope> => {
  const layers = table.config.layers
  const configFile = table.configFile ?? "foundry.config.ts"
  const done = new Set<number>()
  const provided = new Set<string>()
  const waiting = () => {
    const pending = layers.flatMap((_, index) => done.has(index) ? [] : [`layers[${index}]`])
    const toCome = [...new Set(required)].filter((service) => !provided.has(service))
    return pending.length === 0
      ? `the build to finish (the layers of ${configFile} are built)`
      : `${pending.join(", ")} of ${configFile} to build (${done.size} of ${layers.length} built` +
        `${toCome.length === 0 ? "" : `; not provided yet: ${toCome.join(", ")}, which tools require`})`
  }
  const built = (index: number, context: Context.Context<never>) => {
    done.add(index)
    for (const service of context.unsafeMap.keys()) provided.add(service)
    return waitingFor(waiting())
  }
  const [first, ...rest] = layers.map((layer, index) => Layer.tap(layer, (context) => built(index, context)))
  if (first === undefined) return Effect.succeed(Context.unsafeMake<unknown>(new Map()))
  return Effect.zipRight(waitingFor(waiting()), Layer.build(Layer.mergeAll(first, ...rest))).pipe(
    // Config layers are typed by what they may provide (`never` for any); the compiler looks services up by tag.
    Effect.map((context) => Context.unsafeMake<unknown>(context.unsafeMap)),
    Effect.catchAllCause((cause) =>
      Effect.fail(new LayerBuildError({ configFile, cause: Cause.pretty(cause).split("\n")[0] ?? "unknown failure" }))
    )
  )
}

/** What instances can install: the shared tools and catalogue MCP servers that declare `installable`. */
const capabilitiesOf = (table: RouteTable, tools: ReadonlyMap<AnyTool, CompiledTool>): ReadonlyMap<string, Capability> => {
  const capabilities = new Map<string, Capability>()
  for (const route of table.tools) {
    const tool = tools.get(route.definition)
    const installable = route.definition.installable
    if (tool === undefined || installable === undefined || route.agent !== undefined) continue
    capabilities.set(capabilityKey("tool", route.id), {
      kind: "tool",
      id: route.id,
      file: route.file,
      description: route.definition.description,
      config: installable.config,
      tool
    })
  }
  for (const route of table.mcpServers) {
    capabilities.set(capabilityKey("mcp", route.id), {
      kind: "mcp",
      id: route.id,
      file: route.file,
      description: route.definition.description,
      config: route.definition.installable.config,
      server: route.definition,
      mount: mountNameOf(route.id)
    })
  }
  return capabilities
}

/**
 * Every agent with its tools by the names its model calls them, and what is wrong with the routes
 * that can be found without building a layer of the config.
 */
const compileRoutes = (table: RouteTable, release: string) => {
  const allTools = new Map<AnyTool, CompiledTool>()
  for (const route of table.tools) allTools.set(route.definition, compileTool(route.definition, route.id, route.file))
  const errors: Array<RouteError> = []
  const agents = new Map<string, CompiledAgent>()
  for (const route of table.agents) {
    const compiled = compileAgent(route, table, allTools, release)
    errors.push(...compiled.errors)
    agents.set(route.id, compiled.agent)
  }
  errors.push(...table.environments.flatMap((route) => [...missingPackages(route, table.root), ...missingFolder(route, table.root)]))
  errors.push(...table.mcpServers.flatMap(unmountable))
  errors.push(...table.tools.flatMap((route) => uninstallable(route, allTools.get(route.definition))))
  return { allTools, agents, errors }
}

/**
 * What a build of the route table would refuse before it builds the config's layers (tools that
 * clash, a subagent that is no agent, an environment's missing package or folder, an MCP server
 * that cannot be mounted): for commands
 * that show a project without serving it.
 */
export const routeProblems = (table: RouteTable): ReadonlyArray<RouteError> => compileRoutes(table, "unreleased").errors

/** Compiles a route table; the config's layers live as long as the given scope. */
export const compile = Effect.fn("compiler.compile")(function*(table: RouteTable) {
  const release = yield* Effect.sync(() => releaseOf(table.root, table.configFile))
  const { agents, allTools, errors } = compileRoutes(table, release)
  if (errors.length > 0) return yield* new RouteErrors({ errors })

  const services = yield* buildServices(table, [...allTools.values()].flatMap((tool) => tool.definition.requires.map((tag) => tag.key)))
  const missing = [...allTools.values()].flatMap((tool) =>
    tool.definition.requires
      .filter((tag) => Context.getOption(services, tag)._tag === "None")
      .map((tag) => new MissingService({ tool: tool.id, file: tool.file ?? "(inline tool)", service: tag.key }))
  )
  if (missing.length > 0) {
    return yield* new MissingServices({ configFile: table.configFile ?? "foundry.config.ts", missing })
  }
  const app: CompiledApp = { table, agents, capabilities: capabilitiesOf(table, allTools), services, release }
  return app
})

/**
 * An agent with its tools by the names its model calls them: the tools it lists, its subagents,
 * the timer tools it opts into and its environment's verbs; with what is wrong with them. A tool
 * compiled for the first time is added to `allTools`.
 */
const compileAgent = (
  route: Route<AgentDefinition>,
  table: RouteTable,
  allTools: Map<AnyTool, CompiledTool>,
  release: string
): { readonly agent: CompiledAgent; readonly errors: ReadonlyArray<RouteError> } => {
  const errors: Array<RouteError> = []
  const tools = new Map<string, CompiledTool>()
  const add = (tool: CompiledTool | RouteError | undefined) => {
    if (tool instanceof RouteError) errors.push(tool)
    else if (tool !== undefined) tools.set(tool.name, tool)
  }
  for (const tool of route.definition.tools) add(listedTool(tool, route, table, allTools, tools))
  for (const subagent of route.definition.subagents) add(subagentOf(subagent, route.file, table, tools))
  // Timer tools only for agents that opt in: a model offered them schedules work nobody asked for.
  const timers = new Set(timerToolsOf(route.definition))
  for (const timer of timerTools) {
    if (timer.builtin !== undefined && timer.builtin !== "view_image" && timers.has(timer.builtin) && !tools.has(timer.name)) add(timer)
  }
  const configFile = table.configFile ?? "foundry.config.ts"
  const mcp = mountsOf(route.definition.mcp, route.file, table.config.mcp, configFile, table.root)
  for (const name of mcp.unknown) {
    errors.push(new RouteError({
      file: route.file,
      problem: `mcp.${name} is true, but ${configFile} declares no MCP server named "${name}"`,
      fix: `declare it in ${configFile} (mcp: { ${name}: { command: "..." } }), or here instead of true`
    }))
  }
  const environment = route.definition.environment
  if (environment !== undefined) {
    const environmentId = table.idOf(environment)
    if (environmentId === undefined) {
      errors.push(new RouteError({
        file: route.file,
        problem: "the environment is not a route of this project",
        fix: "define it in environments/<name>.ts and import it from there"
      }))
    }
    for (const verb of environmentId === undefined ? [] : environmentTools({
      environmentId,
      environment,
      root: table.root,
      release,
      mounts: mcp.mounts,
      permissions: table.config.permissions,
      toolNames: scriptToolNames(environment, table)
    })) {
      add(
        tools.has(verb.name)
          ? new RouteError({
            file: route.file,
            problem: `the tool "${tools.get(verb.name)?.id}" is named ${verb.name}, like a verb of the environment ${environmentId}`,
            fix: "rename the tool: defineTool({ name: \"...\" })"
          })
          : verb
      )
    }
  }
  return { agent: { id: route.id, file: route.file, definition: route.definition, tools, mcp: mcp.mounts }, errors }
}

/** The name the model would call each Foundry tool of an environment's tools modules by (as `compileTool` names it). */
const scriptToolNames = (environment: EnvironmentDefinition, table: RouteTable): ReadonlyMap<AnyTool, string> =>
  new Map(environment.modules.flatMap((module) =>
    module._tag !== "ToolsModule" ? [] : Object.entries(module.tools).map(([key, tool]): readonly [AnyTool, string] =>
      [tool, tool.name ?? table.idOf(tool)?.split("/").pop() ?? key])))

/** A tool the agent of `route` lists, compiled, or why a model cannot be offered it beside `tools`. */
const listedTool = (
  tool: AnyTool,
  { file, id: agentId }: Route<AgentDefinition>,
  table: RouteTable,
  allTools: Map<AnyTool, CompiledTool>,
  tools: ReadonlyMap<string, CompiledTool>
): CompiledTool | RouteError => {
  const id = table.idOf(tool)
  if (id === undefined && tool.name === undefined) {
    return new RouteError({
      file,
      problem: "a tool that is not a route file has no name",
      fix: `give it name: "<name>" in defineTool, or move it to its own *.tool.ts file`
    })
  }
  // A tool defined in the agent's file is no route, so discovery never checked it: check it here,
  // before compiling it reads its input (not a Schema, it would fail with a TypeError, no file).
  const problems = id === undefined ? validateDefinition(file, "tool", tool) : []
  if (problems.length > 0) {
    return new RouteError({
      file,
      problem: `the tool "${tool.name}" defined in this file: ${problems.map((p) => p.problem).join("; ")}`,
      fix: problems.map((p) => p.fix).join("; ")
    })
  }
  const compiled = allTools.get(tool) ?? compileTool(tool, id ?? `${agentId}/${tool.name}`, undefined)
  allTools.set(tool, compiled)
  if (tool.installable !== undefined) {
    return new RouteError({
      file,
      problem: `tool "${compiled.id}" is installable: instances install it one by one, so an agent cannot list it in tools`,
      fix: `remove it from tools; install it on an instance (POST /api/instances/<id>/installations {"kind":"tool","id":"${compiled.id}"})`
    })
  }
  const clashing = tools.get(compiled.name)
  const problem = unofferable(
    compiled,
    clashing === undefined ? undefined : { problem: `two tools are both named "${compiled.name}" (${clashing.id} and ${compiled.id})`, fix: renameFix }
  )
  if (problem === undefined) return compiled
  // A bad name or input is the tool file's to fix; two tools of one name, the agent's.
  const owner = clashing === undefined ? compiled.file : undefined
  return new RouteError({ file: owner ?? file, ...problem })
}

/** The tool through which an agent (in `file`) delegates to `subagent`, or why it cannot have one. */
const subagentOf = (
  subagent: AgentDefinition,
  file: string,
  table: RouteTable,
  tools: ReadonlyMap<string, CompiledTool>
): CompiledTool | RouteError => {
  const id = table.idOf(subagent)
  const compiled = id === undefined ? undefined : subagentTool(id, subagent.description)
  if (compiled !== undefined && !tools.has(compiled.name)) return compiled
  return new RouteError({
    file,
    problem: compiled === undefined
      ? "a subagent is not a route of this project"
      : `the subagent tool "${compiled.name}" clashes with another tool of the same name`,
    fix: compiled === undefined
      ? "import the subagent from its file under agents/"
      : "rename the tool, or delegate to a subagent with another name"
  })
}
