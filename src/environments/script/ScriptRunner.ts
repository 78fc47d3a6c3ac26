/**
 * Runs environment scripts in sandboxed worker threads. The threads are one shared set whatever
 * the environment, shared out by agent instance (`WorkerPool`): an instance with no script running
 * gets a thread even while other instances' scripts keep `workers` busy. Runs of one scope (an
 * environment's tree) take turns in the order they came, each in a fresh context. A run that
 * outlives its wall-clock limit or its memory, or a worker that dies, costs that thread: a later
 * run starts a fresh one. Idle threads end after `idleMs`, and all of them with the layer's scope.
 * Scripts are compiled (for `validateScript`) on threads of their own too, each with its own
 * esbuild, within a time limit (`ScriptCompiler`).
 */
import { Context, Deferred, Duration, Effect, Layer } from "effect"
import { defaultConfig } from "../../definitions/configDefaults.js"
import { packageLayout } from "../../packageLayout.js"
import { type Compiled, makeScriptCompiler } from "./ScriptCompiler.js"
import type { ScriptHost, ScriptResult, ScriptRun } from "./scriptRun.js"
import { makeWorkerPool } from "./WorkerPool.js"
import { maxProblems } from "./checkLimits.js"

/** Whose run it is. */
export interface ScriptOwner {
  /** Runs of one scope (an environment's tree) take turns, in the order they came. */
  readonly scope: string
  /** The agent instance the run is for: the pool shares its threads out by it. */
  readonly instance: string
}

/** The script runtime. */
export class ScriptRunner extends Context.Tag("foundry/ScriptRunner")<ScriptRunner, {
  /** Runs on a shared worker thread, after the runs of the same scope that came before. */
  readonly run: (owner: ScriptOwner, run: ScriptRun, host: ScriptHost) => Effect.Effect<ScriptResult>
  /** Compiles a script with esbuild on a thread of its own, within `checkTimeoutMs` (`validateScript` checks with it). */
  readonly compile: (path: string, source: string) => Effect.Effect<Compiled>
  /** Live worker threads (for tests and the idle benchmark). */
  readonly workers: Effect.Effect<number>
}>() {}

/** How the runtime uses threads (the project config's `scripts`, whose defaults are `defaultConfig.scripts`). */
export interface ScriptRunnerOptions {
  /** How long a worker thread outlives its last run, in ms (default 30 000). */
  readonly idleMs?: number | undefined
  /**
   * A script's memory in MB (default 256): its worker's heap limit, and how much its run may add
   * to its thread's heap and buffers together (array buffers are outside the heap; checked every
   * 50 ms). Past either, the run fails as out of memory and its thread is replaced.
   */
  readonly maxMemoryMb?: number | undefined
  /** Threads busy at once before a run of an instance that already has one running waits (default 4). */
  readonly workers?: number | undefined
  /** Threads at most (default 8, never below `workers`): a run of an instance with none running starts one past `workers` up to this. */
  readonly maxWorkers?: number | undefined
  /** How long compiling one script may take before it is refused, in ms (default 10 000; a sound one takes well under a second). */
  readonly checkTimeoutMs?: number | undefined
}

/** The heap of a compiling thread: a sound script of the largest size compiles in far less. */
const compileMemoryMb = 512

/** How long the code a run left running after it answered may keep its thread. */
const settleGrace = Duration.seconds(1)

/** How long a thread being terminated may take (milliseconds, unless it is held in a blocking call). */
const stopWithin = Duration.seconds(5)

/** The script runtime, its workers ended with the layer's scope. */
export const ScriptRunnerLive = (options: ScriptRunnerOptions = {}): Layer.Layer<ScriptRunner> =>
  Layer.scoped(
    ScriptRunner,
    Effect.gen(function*() {
      const scope = yield* Effect.scope
      const pool = yield* makeWorkerPool({
        file: packageLayout.sandboxWorkerFile,
        workers: options.workers ?? defaultConfig.scripts.workers,
        maxWorkers: options.maxWorkers ?? defaultConfig.scripts.maxWorkers,
        idleMs: options.idleMs ?? 30_000,
        maxMemoryMb: options.maxMemoryMb ?? defaultConfig.scripts.maxMemoryMb,
        settle: settleGrace,
        stopWithin
      })
      const compiler = yield* makeScriptCompiler({
        file: packageLayout.compileWorkerFile,
        within: Duration.millis(options.checkTimeoutMs ?? 10_000),
        maxMemoryMb: compileMemoryMb,
        idleMs: options.idleMs ?? 30_000,
        maxThreads: options.maxWorkers ?? defaultConfig.scripts.maxWorkers,
        maxProblems
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

      const run = Effect.fn("ScriptRunner.run")(function*(owner: ScriptOwner, script: ScriptRun, host: ScriptHost) {
        return yield* inTurn(owner.scope, pool.run(owner.instance, script, host))
      })

      return ScriptRunner.of({ run, compile: compiler.compile, workers: Effect.sync(pool.live) })
    })
  )
