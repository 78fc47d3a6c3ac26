/**
 * Runs environment scripts in sandboxed worker threads. The threads are one shared set (at most
 * `maxWorkers`, see `WorkerPool`) whatever the environment; runs of one key (an environment's
 * scope) take turns in the order they came, each in a fresh context. A run that outlives its
 * wall-clock limit or its memory, or a worker that dies, costs that thread: a later run starts
 * a fresh one. Idle threads end after `idleMs`, and all of them with the layer's scope.
 */
import { Context, Deferred, Duration, Effect, Layer } from "effect"
import { packageLayout } from "../../packageLayout.js"
import { makeWorkerPool } from "./WorkerPool.js"

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
  /** How much console output the caller shows; at least this much is captured (up to 2 MB). */
  readonly maxOutputBytes: number
  /**
   * How much console output to capture (default four times `maxOutputBytes`), at most 2 MB
   * (`captureCeilingBytes`): what the caller can keep of a long output. All of it is counted.
   */
  readonly maxCapturedBytes?: number
}

/** What a run came to; `output` is the console's text as captured (also when it failed or timed out), `outputBytes` its full size in UTF-8. */
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
  /** Runs on a shared worker thread, after the runs of the same `pool` key (such as the environment's scope) that came before. */
  readonly run: (pool: string, run: ScriptRun, host: ScriptHost) => Effect.Effect<ScriptResult>
  /** Live worker threads (for tests and the idle benchmark). */
  readonly workers: Effect.Effect<number>
}>() {}

/** How the runtime uses threads. */
export interface ScriptRunnerOptions {
  /** How long a worker thread outlives its last run, in ms (default 30 000). */
  readonly idleMs?: number | undefined
  /**
   * A script's memory in MB (default 256): its worker's heap limit, and how far the process's
   * resident memory may grow while it runs (array buffers are outside the heap; checked every
   * 50 ms, and process-wide, so a guard rather than an accounting). Past either, the run fails
   * and its thread is replaced.
   */
  readonly maxMemoryMb?: number | undefined
  /** Worker threads at most, shared by every environment (default 4); further runs wait for one. */
  readonly maxWorkers?: number | undefined
}

/** How long the code a run left running after it answered may keep its thread. */
const settleGrace = Duration.seconds(1)

/** The script runtime, its workers ended with the layer's scope. */
export const ScriptRunnerLive = (options: ScriptRunnerOptions = {}): Layer.Layer<ScriptRunner> =>
  Layer.scoped(
    ScriptRunner,
    Effect.gen(function*() {
      const scope = yield* Effect.scope
      const pool = yield* makeWorkerPool({
        file: packageLayout.sandboxWorkerFile,
        maxWorkers: options.maxWorkers ?? 4,
        idleMs: options.idleMs ?? 30_000,
        maxMemoryMb: options.maxMemoryMb ?? 256,
        settle: settleGrace
      })

      // The last run of each key: the next one starts when it has ended (an entry lives while runs are queued).
      const turns = new Map<string, Deferred.Deferred<void>>()
      const inTurn = (key: string, effect: Effect.Effect<ScriptResult>): Effect.Effect<ScriptResult> =>
        Effect.uninterruptibleMask((restore) =>
          Effect.gen(function*() {
            const previous = turns.get(key)
            const done = yield* Deferred.make<void>()
            turns.set(key, done)
            const afterPrevious = previous === undefined ? Effect.void : Deferred.await(previous)
            // A run that gave up waiting hands over only when the one before it is over, so turns never overlap.
            const handOver = afterPrevious.pipe(
              Effect.zipRight(Effect.sync(() => {
                if (turns.get(key) === done) turns.delete(key)
              })),
              Effect.zipRight(Deferred.succeed(done, undefined))
            )
            return yield* restore(Effect.zipRight(afterPrevious, effect)).pipe(Effect.ensuring(Effect.forkIn(Effect.interruptible(handOver), scope)))
          })
        )

      const run = Effect.fn("ScriptRunner.run")(function*(key: string, script: ScriptRun, host: ScriptHost) {
        return yield* inTurn(key, pool.run(script, host))
      })

      return ScriptRunner.of({ run, workers: Effect.sync(pool.live) })
    })
  )
