/**
 * A project's runtime in this process, as `foundry start` composes it (store, event log,
 * dispatcher), without or with its HTTP server, with every agent on a given model.
 */
import { HttpServer } from "@effect/platform"
import { NodeContext } from "@effect/platform-node"
import { Context, Effect, Layer } from "effect"
import { type RuntimeOptions, runtimeLayer, serverLayer } from "../../src/cli/ProjectRuntime.js"
import { loadProject } from "../../src/compiler/loadProject.js"
import { Dispatcher, type RunRequest } from "../../src/dispatch/Dispatcher.js"
import { Database } from "../../src/durable/Database.js"
import { Environments } from "../../src/environments/Environments.js"
import { ScriptRunner } from "../../src/environments/script/ScriptRunner.js"
import { Store } from "../../src/durable/Store.js"
import { EventStorage } from "../../src/events/EventStorage.js"
import type { LanguageModel } from "../../src/models/Model.js"
import { layerFixed } from "../../src/models/ModelResolverLive.js"
import { collectGarbage } from "./stats.js"

// `bin/foundry.js` tells the route loader that tsx is already installed; `npm run bench` loads
// this file through `node --import tsx`, so the same holds here.
Reflect.set(globalThis, Symbol.for("foundry/tsx-registered"), true)

/** The parts of a running project a benchmark drives. */
export interface BenchRuntime {
  readonly dispatcher: Context.Tag.Service<Dispatcher>
  readonly store: Context.Tag.Service<Store>
  readonly events: Context.Tag.Service<EventStorage>
  readonly database: Context.Tag.Service<Database>
  readonly environments: Context.Tag.Service<Environments>
  readonly scripts: Context.Tag.Service<ScriptRunner>
}

/** Loads the project at `root` and builds its runtime in the current scope, on `storeFile` if given, else on its config's store. */
export const startRuntime = (
  root: string,
  options: { readonly storeFile: string | undefined; readonly model: LanguageModel; readonly environments?: RuntimeOptions["environments"] }
) =>
  Effect.gen(function*() {
    const app = yield* loadProject(root, 1)
    const context = yield* Layer.build(runtimeLayer(app, { storeFile: options.storeFile, models: layerFixed(options.model), environments: options.environments }))
    const runtime: BenchRuntime = {
      dispatcher: Context.get(context, Dispatcher),
      store: Context.get(context, Store),
      events: Context.get(context, EventStorage),
      database: Context.get(context, Database),
      environments: Context.get(context, Environments),
      scripts: Context.get(context, ScriptRunner)
    }
    return runtime
  }).pipe(Effect.provide(NodeContext.layer))

/** A project served over HTTP in this process: its base URL, and the database for its counters. */
export interface BenchServer {
  readonly url: string
  readonly database: Context.Tag.Service<Database>
}

/**
 * Loads the project at `root` and serves it with `serverLayer` (as `foundry start` does) on a free
 * loopback port, in the current scope.
 */
export const startServer = (root: string, options: { readonly storeFile: string; readonly model: LanguageModel }) =>
  Effect.gen(function*() {
    const app = yield* loadProject(root, 1)
    const context = yield* Layer.build(
      serverLayer(app, { port: 0, host: "127.0.0.1" }, { storeFile: options.storeFile, models: layerFixed(options.model) })
    )
    const address = Context.get(context, HttpServer.HttpServer).address
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("the server is not listening on TCP")
    const server: BenchServer = { url: `http://127.0.0.1:${address.port}`, database: Context.get(context, Database) }
    return server
  }).pipe(Effect.provide(NodeContext.layer))

/** Submits one run and waits for its end; the result is the milliseconds that took. */
export const timedRun = (runtime: BenchRuntime, request: RunRequest) =>
  Effect.gen(function*() {
    const started = performance.now()
    const run = yield* runtime.dispatcher.submit(request)
    yield* runtime.dispatcher.await(run.id)
    return { runId: run.id, ms: performance.now() - started }
  })

/**
 * Memory figures of this process once it has settled: a full GC (when `--expose-gc` allows
 * one), then again every 300 ms until RSS stops moving, because V8 gives freed heap pages back to
 * the OS only after it has been idle for a while.
 */
export const settledMemory = Effect.promise(async () => {
  let previous = process.memoryUsage()
  for (let attempt = 1; attempt <= 10; attempt++) {
    collectGarbage()
    await new Promise((resolve) => setTimeout(resolve, 300))
    const current = process.memoryUsage()
    if (attempt >= 3 && Math.abs(current.rss - previous.rss) < 512 * 1024) return current
    previous = current
  }
  return previous
})

/** Progress for people: stderr, so stdout holds only the JSON results. */
export const progress = (message: string): Effect.Effect<void> => Effect.sync(() => process.stderr.write(`[bench] ${message}\n`))
