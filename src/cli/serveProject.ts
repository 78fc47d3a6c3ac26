/**
 * Serving a project: the first build, the server, recovery of unfinished runs, and (for
 * `foundry dev`) rebuilding on every change while the last good build keeps serving.
 */
import { HttpServer } from "@effect/platform"
import { Context, Effect, Exit, Layer, Scope, Stream } from "effect"
import type { CompiledApp } from "../compiler/CompiledApp.js"
import { CurrentApp } from "../compiler/CurrentApp.js"
import { emptyApp, loadProject } from "../compiler/loadProject.js"
import { Dispatcher } from "../dispatch/Dispatcher.js"
import { ModelResolver } from "../models/Model.js"
import { watchProject } from "../router/watch.js"
import { Schedules } from "../triggers/Schedules.js"
import { CliError } from "./CliError.js"
import { serverLayer, storeFileOf } from "./ProjectRuntime.js"
import { reportError, say, style, warn } from "./terminal.js"

/** How to serve. */
export interface ServeOptions {
  readonly root: string
  readonly port: number | undefined
  readonly host: string | undefined
  readonly watch: boolean
}

/** Addresses other than these would expose the API; that needs auth tokens, which Foundry does not have yet. */
const loopback = new Set(["127.0.0.1", "localhost", "::1"])

const summary = (app: CompiledApp): string => {
  const t = app.table
  const count = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`
  return [
    count(t.agents.length, "agent"),
    count(t.tools.length, "tool"),
    count(t.schedules.length, "schedule"),
    count(t.playbooks.length, "playbook"),
    count(t.environments.length, "environment")
  ].join(", ")
}

/** One build in its own scope: the scope holds the config's layers for as long as the build serves. */
const build = (root: string, generation: number) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const result = yield* loadProject(root, generation).pipe(Scope.extend(scope), Effect.either)
    if (result._tag === "Left") yield* Scope.close(scope, Exit.void)
    return { result, scope }
  })

/** Serves the project at `root` until interrupted. */
export const serveProject = Effect.fn("cli.serveProject")(function*(options: ServeOptions) {
  let generation = 1
  const first = yield* build(options.root, generation)
  let app: CompiledApp
  let buildScope: Scope.CloseableScope | undefined
  if (first.result._tag === "Left") {
    yield* reportError("The project does not build; serving no routes until it does.", first.result.left)
    if (!options.watch) return yield* Effect.fail(first.result.left)
    app = emptyApp(options.root)
  } else {
    app = first.result.right
    buildScope = first.scope
  }
  const host = options.host ?? app.table.config.server.host
  if (!loopback.has(host)) {
    return yield* Effect.fail(
      new CliError({
        message: `refusing to bind to ${host}: the API has no authentication yet, so it only listens on loopback; use --host 127.0.0.1`
      })
    )
  }
  const port = options.port ?? app.table.config.server.port
  const context = yield* Layer.build(serverLayer(app, { port, host }))
  const server = Context.get(context, HttpServer.HttpServer)
  const current = Context.get(context, CurrentApp)
  const dispatcher = Context.get(context, Dispatcher)
  const models = Context.get(context, ModelResolver)
  const schedules = Context.get(context, Schedules)
  const address = server.address._tag === "TcpAddress" ? `http://${host}:${server.address.port}` : String(server.address)

  yield* say(style.bold(`Foundry ${options.watch ? "dev" : "server"}`) + style.dim(` (project ${options.root})`))
  yield* say(`  routes:  ${summary(app)}`)
  yield* say(`  store:   ${storeFileOf(app)}`)
  yield* say(`  API:     ${address}/api  (OpenAPI: ${address}/api/openapi.json)`)
  if (models.notice !== undefined) yield* say(style.yellow(`  note:    ${models.notice}`))
  yield* say(style.green(`listening on ${address}`))

  const recovered = yield* dispatcher.recover
  if (recovered > 0) yield* say(`resumed ${recovered} unfinished run${recovered === 1 ? "" : "s"}`)

  if (options.watch) {
    const reload = Effect.gen(function*() {
      generation++
      const next = yield* build(options.root, generation)
      if (next.result._tag === "Left") {
        yield* reportError("Reload failed; still serving the last good build.", next.result.left)
        return
      }
      const previous = buildScope
      buildScope = next.scope
      yield* current.set(next.result.right)
      yield* schedules.sync(next.result.right)
      if (previous !== undefined) yield* Scope.close(previous, Exit.void)
      yield* say(style.cyan(`reloaded (build ${generation}): ${summary(next.result.right)}`))
    }).pipe(Effect.catchAllCause((cause) => warn(`reload crashed: ${String(cause)}`)))
    yield* watchProject(options.root).pipe(Stream.runForEach(() => reload), Effect.forkScoped)
  }
  return yield* Effect.never
})
