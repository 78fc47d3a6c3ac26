/**
 * One build of a project: discover the route files, write the generated files, compile. The
 * config's layers live in the scope the build runs in.
 */
import { Context, Effect } from "effect"
import { defineConfig } from "../definitions/defineConfig.js"
import { writeGenerated } from "../router/codegen.js"
import { discover } from "../router/discover.js"
import type { RouteTable } from "../router/RouteTable.js"
import type { CompiledApp } from "./CompiledApp.js"
import { compile } from "./compile.js"

/** Discovers, generates and compiles the project at `root` as build `generation`. */
export const loadProject = Effect.fn("compiler.loadProject")(function*(root: string, generation: number) {
  const table = yield* discover(root, generation)
  yield* writeGenerated(table)
  return yield* compile(table)
})

/** An application with no routes: what `foundry dev` serves until a first good build. */
export const emptyApp = (root: string): CompiledApp => {
  const table: RouteTable = {
    root,
    agents: [],
    tools: [],
    playbooks: [],
    schedules: [],
    environments: [],
    config: defineConfig({}),
    configFile: undefined,
    idOf: () => undefined
  }
  return { table, agents: new Map(), services: Context.unsafeMake<unknown>(new Map()) }
}
