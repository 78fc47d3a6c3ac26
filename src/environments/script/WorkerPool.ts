/**
 * The worker threads scripts run on: one shared set, whoever's the run; every run gets a fresh
 * context on its thread, so nothing passes from one agent instance to another. Threads are few and
 * long-lived on purpose: a thread per agent instance grows the process's native memory with every
 * thread started, even after it ends.
 *
 * How many run at once is shared out by instance, so that one instance's scripts never make
 * another's wait. A run of an instance that has no script running gets a thread at once: an idle
 * one, or a new one even when `workers` are busy, up to `maxWorkers`. A run of an instance that
 * already has one running (another environment's, another conversation's) waits until fewer than
 * `workers` threads are busy. Waiting runs go in the order they came, each as soon as its rule
 * lets it. A thread beyond `workers` ends once it has been idle a second, so the set shrinks back.
 *
 * A thread is free again once the code its last run left behind has ended (a run can answer while
 * a promise chain of its still spins, which would otherwise be charged to the next run); one that
 * does not settle within `settle`, or that timed out or crashed, is terminated and a later run
 * starts another. A thread idle for `idleMs` is terminated, so an idle server holds none.
 */
import { Deferred, Duration, Effect, Fiber, type Scope } from "effect"
import type { ScriptHost, ScriptResult, ScriptRun } from "./scriptRun.js"
import { type ScriptWorker, spawnScriptWorker } from "./ScriptWorker.js"
import { makeWorkerMemory } from "./WorkerMemory.js"

/** Runs scripts on the shared threads. */
export interface WorkerPool {
  /** Runs `run` for agent instance `instance` (the key its share of the threads is counted by). */
  readonly run: (instance: string, run: ScriptRun, host: ScriptHost) => Effect.Effect<ScriptResult>
  /** Threads alive (running, settling, idle, or being terminated). */
  readonly live: () => number
}

/** How the pool uses threads (`ScriptRunnerOptions` says what each is for). */
export interface WorkerPoolOptions {
  /** The worker's module (`packageLayout.sandboxWorkerFile`). */
  readonly file: string
  readonly workers: number
  readonly maxWorkers: number
  readonly idleMs: number
  readonly maxMemoryMb: number
  /** How long the code a run left behind may keep its thread before the thread is terminated. */
  readonly settle: Duration.DurationInput
  /** How long the pool waits for a thread it terminates (`ScriptWorker.terminate`). */
  readonly stopWithin: Duration.DurationInput
}

/** How long a thread beyond `workers` stays idle for the next run before it ends. */
const extraLingerMs = 1000

/** How long a run waits for a thread that is settling before it starts another. */
const settleWait = Duration.millis(100)

interface Idle {
  readonly worker: ScriptWorker
  reaper: Fiber.RuntimeFiber<void> | undefined
}

/** A run waiting for its turn at a thread. */
interface Waiting {
  readonly instance: string
  readonly admitted: Deferred.Deferred<void>
}

/** The pool, its threads terminated when the scope closes. */
export const makeWorkerPool = (options: WorkerPoolOptions): Effect.Effect<WorkerPool, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const memory = yield* makeWorkerMemory
    const workers = Math.max(1, options.workers)
    const maxWorkers = Math.max(workers, options.maxWorkers)
    const idle: Array<Idle> = []
    const threads = new Set<ScriptWorker>()
    let live = 0
    let settling = 0
    let closed = false

    // Threads held: running, settling or being terminated; idle threads are not. A thread is
    // started only by a holder that found none idle, so idle + held <= maxWorkers. `heldBy` counts
    // the threads each instance's runs hold.
    let held = 0
    const heldBy = new Map<string, number>()
    const queue: Array<Waiting> = []

    const hold = (instance: string) => {
      held++
      heldBy.set(instance, (heldBy.get(instance) ?? 0) + 1)
    }
    const mayStart = (instance: string): boolean => held < ((heldBy.get(instance) ?? 0) === 0 ? maxWorkers : workers)
    /** Lets in every waiting run its rule allows, in the order they came. */
    const admit = () => {
      for (let at = 0; at < queue.length;) {
        const next = queue[at]!
        if (mayStart(next.instance)) {
          queue.splice(at, 1)
          hold(next.instance)
          Deferred.unsafeDone(next.admitted, Effect.void)
        } else {
          at++
        }
      }
    }
    const giveBack = (instance: string) => {
      held--
      const left = (heldBy.get(instance) ?? 1) - 1
      if (left === 0) heldBy.delete(instance)
      else heldBy.set(instance, left)
      admit()
    }
    /** Waits for the run's turn; once it returns the run holds a thread, which `giveBack` returns. */
    const acquire = (instance: string): Effect.Effect<void> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          const waiting: Waiting = { instance, admitted: yield* Deferred.make<void>() }
          queue.push(waiting)
          admit()
          yield* restore(Deferred.await(waiting.admitted)).pipe(
            Effect.onInterrupt(() =>
              Effect.sync(() => {
                const at = queue.indexOf(waiting)
                if (at >= 0) queue.splice(at, 1)
                else giveBack(instance)
              })
            )
          )
        })
      )

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
        memory,
        stopWithin: options.stopWithin,
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

    // Threads being terminated: still held (no thread starts before they are gone), but no longer kept.
    let ending = 0
    const end = (worker: ScriptWorker) =>
      Effect.suspend(() => {
        ending++
        return Effect.ensuring(worker.terminate, Effect.sync(() => ending--))
      })

    // Held while it terminates, so a run cannot start a thread before this one is gone.
    const endIdle = (entry: Idle) =>
      Effect.suspend(() => {
        const at = idle.indexOf(entry)
        if (at < 0) return Effect.void
        idle.splice(at, 1)
        held++
        return Effect.ensuring(end(entry.worker), Effect.sync(() => {
          held--
          admit()
        }))
      })
    // A thread beyond `workers` lingers a moment only: in a burst of instances the next run takes
    // it, where ending it at once started a thread per run (each costing milliseconds and native
    // memory the process keeps). The others wait out `idleMs`.
    const linger = Math.min(options.idleMs, extraLingerMs)
    const reap = (entry: Idle) =>
      Effect.sleep(Duration.millis(linger)).pipe(
        Effect.zipRight(Effect.suspend(() =>
          live - ending > workers ? endIdle(entry) : Effect.zipRight(Effect.sleep(Duration.millis(options.idleMs - linger)), endIdle(entry))
        ))
      )

    /** After a run (counted in `settling`): the thread back among the idle ones once settled (else gone), then the instance's hold. */
    const release = (instance: string, worker: ScriptWorker) =>
      worker.settle(options.settle).pipe(
        Effect.flatMap((reusable) =>
          !reusable || closed
            ? Effect.void
            : Effect.gen(function*() {
              const entry: Idle = { worker, reaper: undefined }
              idle.push(entry)
              entry.reaper = yield* Effect.forkIn(reap(entry), scope)
            })
        ),
        Effect.ensuring(Effect.sync(() => {
          settling--
          changed()
        })),
        Effect.ensuring(Effect.sync(() => giveBack(instance)))
      )

    const run = (instance: string, script: ScriptRun, host: ScriptHost): Effect.Effect<ScriptResult> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          yield* restore(acquire(instance))
          if (closed) {
            giveBack(instance)
            return { _tag: "Failed", error: "the script runtime has shut down", output: "", outputBytes: 0 } satisfies ScriptResult
          }
          const worker = yield* take
          const exit = yield* Effect.exit(restore(worker.run(script, host)))
          // The caller has its answer now; the thread is given back when what the run left behind is over.
          // (Forked interruptible: a fiber inherits this region's uninterruptibility, and the scope's end must stop it.)
          settling++
          yield* Effect.forkIn(Effect.interruptible(release(instance, worker)), scope)
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
