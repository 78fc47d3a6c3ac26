/**
 * Runs environment scripts in sandboxed worker threads. Workers are pooled by a key (an
 * environment's scope): a pool has at most one worker, its runs take turns on it, and it is
 * terminated once the pool has been idle for a while (and all of them when the layer's scope
 * closes). A run that outlives its wall-clock limit, or a worker that dies (out of memory), costs
 * that worker: the pool's next run starts a fresh one.
 */
import { Context, Duration, Effect, Layer, RcMap } from "effect"
import { packageLayout } from "../../packageLayout.js"
import { type ScriptWorker, spawnScriptWorker } from "./ScriptWorker.js"

/** The host side of a run's env: module calls (env:fs, tools, adapters). */
export interface ScriptHost {
  /**
   * Calls `fn` of host module `module` with the script's arguments (JSON data, byte arrays as
   * `Uint8Array`). Answer with JSON-able data or a `Uint8Array` (structured clone); a failure is a
   * rejection or `{ error: string }`, which the script sees as a rejected promise with that message.
   */
  readonly call: (module: string, fn: string, args: ReadonlyArray<unknown>) => Promise<unknown>
}

/** A module a run may import as `env:<name>`. */
export interface ScriptModule {
  readonly name: string
  readonly exports: ReadonlyArray<string>
  /** `host`: each export is an async function answered by `ScriptHost.call`; `pure`: `source` evaluated in the sandbox. */
  readonly kind: "host" | "pure"
  /** A pure module's bundle (from `bundlePureModule`): code whose value is the module's exports. */
  readonly source?: string
}

/** One run of a script. */
export interface ScriptRun {
  /** The compiled code, from `validateScript`. */
  readonly code: string
  /** The script's path in the environment (stack traces name it). */
  readonly path: string
  /** The argument of the default export (JSON data). */
  readonly args: unknown
  /** `run` calls the default export; `test` runs what the file registers with `env:test`'s `test`. */
  readonly mode: "run" | "test"
  readonly modules: ReadonlyArray<ScriptModule>
  /** The wall-clock limit: the worker is terminated when it passes. */
  readonly timeoutMs: number
  /** How much console output the caller keeps; up to four times as much is captured, all of it counted. */
  readonly maxOutputBytes: number
}

/** What a run came to; `output` is the console's text, `outputBytes` its full size in UTF-8. */
export type ScriptResult =
  | { readonly _tag: "Completed"; readonly value: unknown; readonly output: string; readonly outputBytes: number }
  | { readonly _tag: "Failed"; readonly error: string; readonly output: string; readonly outputBytes: number }
  | { readonly _tag: "TimedOut"; readonly output: string; readonly outputBytes: number }
  | {
    readonly _tag: "Tests"
    readonly results: ReadonlyArray<{ readonly name: string; readonly ok: boolean; readonly error?: string }>
    readonly output: string
    readonly outputBytes: number
  }

/** The script runtime. */
export class ScriptRunner extends Context.Tag("foundry/ScriptRunner")<ScriptRunner, {
  /** Runs on the worker of `pool` (a key such as the environment's scope), after the pool's earlier runs. */
  readonly run: (pool: string, run: ScriptRun, host: ScriptHost) => Effect.Effect<ScriptResult>
  /** Live worker threads (for tests and the idle benchmark). */
  readonly workers: Effect.Effect<number>
}>() {}

/** How the runtime uses threads. */
export interface ScriptRunnerOptions {
  /** How long a pool's worker outlives its last run, in ms (default 30 000). */
  readonly idleMs?: number
  /** A worker's heap limit in MB (default 256): a script that needs more fails, and its worker is replaced. */
  readonly maxMemoryMb?: number
}

interface Pool {
  readonly run: (run: ScriptRun, host: ScriptHost) => Effect.Effect<ScriptResult>
  readonly close: Effect.Effect<void>
}

/** The script runtime, its workers ended with the layer's scope. */
export const ScriptRunnerLive = (options: ScriptRunnerOptions = {}): Layer.Layer<ScriptRunner> =>
  Layer.scoped(
    ScriptRunner,
    Effect.gen(function*() {
      const maxMemoryMb = options.maxMemoryMb ?? 256
      let live = 0

      const spawn = (): ScriptWorker => {
        live++
        return spawnScriptWorker({ file: packageLayout.sandboxWorkerFile, maxMemoryMb, onExit: () => live-- })
      }

      const makePool = Effect.gen(function*() {
        const turn = yield* Effect.makeSemaphore(1)
        let worker: ScriptWorker | undefined
        const ready = (): ScriptWorker => {
          if (worker === undefined || !worker.alive()) worker = spawn()
          return worker
        }
        const pool: Pool = {
          run: (run, host) => turn.withPermits(1)(Effect.suspend(() => ready().run(run, host))),
          close: Effect.suspend(() => worker === undefined ? Effect.void : worker.terminate)
        }
        return pool
      })

      const pools = yield* RcMap.make({
        lookup: (_key: string) => Effect.acquireRelease(makePool, (pool) => pool.close),
        idleTimeToLive: Duration.millis(options.idleMs ?? 30_000)
      })

      const run = Effect.fn("ScriptRunner.run")(function*(key: string, script: ScriptRun, host: ScriptHost) {
        const pool = yield* RcMap.get(pools, key)
        return yield* pool.run(script, host)
      }, Effect.scoped)

      return ScriptRunner.of({ run, workers: Effect.sync(() => live) })
    })
  )
