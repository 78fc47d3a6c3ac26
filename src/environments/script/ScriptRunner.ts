/**
 * Runs environment scripts in sandboxed worker threads. The threads are one shared set (at most
 * `maxWorkers`, see `WorkerPool`) whatever the environment; runs of one key (an environment's
 * scope) take turns in the order they came, each in a fresh context. A run that outlives its
 * wall-clock limit or its memory, or a worker that dies, costs that thread: a later run starts
 * a fresh one. Idle threads end after `idleMs`, and all of them with the layer's scope.
 */
import { Context, Deferred, Duration, Effect, Layer } from "effect"
import { packageLayout } from "../../packageLayout.js"
import type { ScriptHost, ScriptResult, ScriptRun } from "./scriptRun.js"
import { makeWorkerPool } from "./WorkerPool.js"

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
