/**
 * The worker threads scripts run on: one shared set of at most `maxWorkers`, whoever's the run.
 * A run takes an idle thread, starts one while under the cap, or waits for one to be free; every
 * run gets a fresh context on its thread, so nothing passes from one agent instance to another.
 * Threads are few and long-lived on purpose: a thread per agent instance grows the process's
 * native memory with every thread started, even after it ends.
 *
 * A thread is free again once the code its last run left behind has ended (a run can answer while
 * a promise chain of its still spins, which would otherwise be charged to the next run); one that
 * does not settle within `settle`, or that timed out or crashed, is terminated and a later run
 * starts another. A thread idle for `idleMs` is terminated, so an idle server holds none.
 */
import { Duration, Effect, Fiber, type Scope } from "effect"
import type { ScriptHost, ScriptResult, ScriptRun } from "./scriptRun.js"
import { type ScriptWorker, spawnScriptWorker } from "./ScriptWorker.js"

/** Runs scripts on the shared threads. */
export interface WorkerPool {
  readonly run: (run: ScriptRun, host: ScriptHost) => Effect.Effect<ScriptResult>
  /** Threads alive (running, settling, idle, or being terminated). */
  readonly live: () => number
}

/** How the pool uses threads (`ScriptRunnerOptions` says what each is for). */
export interface WorkerPoolOptions {
  /** The worker's module (`packageLayout.sandboxWorkerFile`). */
  readonly file: string
  readonly maxWorkers: number
  readonly idleMs: number
  readonly maxMemoryMb: number
  /** How long the code a run left behind may keep its thread before the thread is terminated. */
  readonly settle: Duration.DurationInput
}

/** How long a run waits for a thread that is settling before it starts another. */
const settleWait = Duration.millis(100)

interface Idle {
  readonly worker: ScriptWorker
  reaper: Fiber.RuntimeFiber<void> | undefined
}

/** The pool, its threads terminated when the scope closes. */
export const makeWorkerPool = (options: WorkerPoolOptions): Effect.Effect<WorkerPool, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    // A permit per thread that is running, settling or being terminated; idle threads hold none.
    // A thread is started only by a permit holder that found none idle, so idle + permits <= maxWorkers.
    const permits = yield* Effect.makeSemaphore(Math.max(1, options.maxWorkers))
    const idle: Array<Idle> = []
    const threads = new Set<ScriptWorker>()
    let live = 0
    let settling = 0
    let closed = false

    // Runs waiting briefly for a settling thread (see `take`), told when one is idle or none settles.
    const waiters = new Set<() => void>()
    const changed = () => {
      for (const check of [...waiters]) check()
    }
    const settlingOver = Effect.async<void>((resume) => {
      const check = () => {
        if (idle.length === 0 && settling > 0) return
        waiters.delete(check)
        resume(Effect.void)
      }
      waiters.add(check)
      check()
      return Effect.sync(() => waiters.delete(check))
    })

    const spawn = (): ScriptWorker => {
      live++
      const worker = spawnScriptWorker({
        file: options.file,
        maxMemoryMb: options.maxMemoryMb,
        onExit: () => {
          live--
          threads.delete(worker)
        }
      })
      threads.add(worker)
      return worker
    }

    /**
     * The most recently used idle thread (so the others age out), or a new one. A thread whose run
     * has just answered is usually free a moment later: waiting that moment keeps a script run
     * after script on one thread instead of starting another.
     */
    const take = Effect.gen(function*() {
      if (idle.length === 0 && settling > 0) yield* Effect.timeoutOption(settlingOver, settleWait)
      for (let entry = idle.pop(); entry !== undefined; entry = idle.pop()) {
        if (entry.reaper !== undefined) yield* Fiber.interruptFork(entry.reaper)
        if (entry.worker.alive()) return entry.worker
      }
      return spawn()
    })

    // Holds a permit while it terminates, so a run cannot start a thread before this one is gone.
    const reap = (entry: Idle) =>
      Effect.sleep(Duration.millis(options.idleMs)).pipe(
        Effect.zipRight(permits.withPermits(1)(Effect.suspend(() => {
          const at = idle.indexOf(entry)
          if (at < 0) return Effect.void
          idle.splice(at, 1)
          return entry.worker.terminate
        })))
      )

    /** After a run (counted in `settling`): the thread back among the idle ones once settled (else gone), then its permit. */
    const release = (worker: ScriptWorker) =>
      worker.settle(options.settle).pipe(
        Effect.flatMap((reusable) =>
          reusable && !closed
            ? Effect.gen(function*() {
              const entry: Idle = { worker, reaper: undefined }
              idle.push(entry)
              entry.reaper = yield* Effect.forkIn(reap(entry), scope)
            })
            : Effect.void
        ),
        Effect.ensuring(Effect.sync(() => {
          settling--
          changed()
        })),
        Effect.ensuring(permits.release(1))
      )

    const run = (script: ScriptRun, host: ScriptHost): Effect.Effect<ScriptResult> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          yield* restore(permits.take(1))
          if (closed) {
            yield* permits.release(1)
            return { _tag: "Failed", error: "the script runtime has shut down", output: "", outputBytes: 0 } satisfies ScriptResult
          }
          const worker = yield* take
          const exit = yield* Effect.exit(restore(worker.run(script, host)))
          // The caller has its answer now; the thread is given back when what the run left behind is over.
          // (Forked interruptible: a fiber inherits this region's uninterruptibility, and the scope's end must stop it.)
          settling++
          yield* Effect.forkIn(Effect.interruptible(release(worker)), scope)
          return yield* exit
        })
      )

    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closed = true
        idle.length = 0
        return Effect.forEach([...threads], (worker) => worker.terminate, { concurrency: "unbounded", discard: true })
      })
    )

    return { run, live: () => live }
  })
