/**
 * One build of a project: discover the route files, write the generated files, compile. The
 * config's layers live in the scope the build runs in.
 */
import { Context, Effect, Either } from "effect"
import { writeGenerated } from "../router/codegen.js"
import { discover } from "../router/discover.js"
import type { ProjectConfig } from "../router/loadConfig.js"
import type { RouteTable } from "../router/RouteTable.js"
import type { CompiledApp } from "./CompiledApp.js"
import { compile } from "./compile.js"
import { releaseOf } from "./projectRelease.js"

/**
 * Discovers, generates and compiles the project at `root` as build `generation`, with its config
 * as already loaded when the caller has it.
 */
export const loadProject = Effect.fn("compiler.loadProject")(function*(
  root: string,
  generation: number,
  config?: ProjectConfig
) {
  const table = yield* discover(root, generation, config === undefined ? undefined : Either.right(config))
  yield* writeGenerated(table)
  return yield* compile(table)
})

/** An application with its config and no routes: what `foundry dev` serves until a first good build. */
export const emptyApp = (root: string, { config, configFile }: ProjectConfig): CompiledApp => {
  const table: RouteTable = {
    root,
    agents: [],
    tools: [],
    mcpServers: [],
    playbooks: [],
    schedules: [],
    environments: [],
    config,
    configFile,
    idOf: () => undefined
  }
  return { table, agents: new Map(), capabilities: new Map(), services: Context.unsafeMake<unknown>(new Map()), release: releaseOf(root, configFile) }
}
