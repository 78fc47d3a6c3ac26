/**
 * The runs this process executes, or holds in their conversations' lanes until their turn: each
 * gets a fiber only once its place in the execution queue starts it, and is forgotten once that
 * fiber has ended (or its place was given up without starting). Whoever waits for a run's end
 * here is told then. Closing the scope stops them all: nothing more starts, and what executes is
 * interrupted, its run left as stored for the next start to resume.
 */
import { Effect, Fiber, FiberId } from "effect"
import type { RunRecord } from "../durable/records.js"
import type { Lease } from "../journal/journalRecords.js"
import { makeExecutionQueue, type Place } from "./executionQueue.js"

/** A run's execution in this process: waiting for its turn until it has a fiber. */
interface Execution {
  readonly runId: string
  readonly place: Place
  /** The conversation's lease, when the submission took it. */
  readonly claimed: Lease | undefined
  fiber: Fiber.RuntimeFiber<void> | undefined
  /** Told once the execution has ended (or left its lane without starting). */
  readonly ended: Array<() => void>
}

/** What the executions are made with. */
export interface ExecutionsOptions {
  /** Runs executing at once, across conversations. */
  readonly concurrency: number
  /** Forks the run's execution, under `claimed` when its submission took the conversation's lease. */
  readonly fork: (run: RunRecord, claimed: Lease | undefined) => Fiber.RuntimeFiber<void>
  /** Gives up a lease a submission took for a run that will not start here after all. */
  readonly letGo: (lease: Lease) => Effect.Effect<void>
}

/** The executions of this process, in the current scope. */
export const makeExecutions = (options: ExecutionsOptions) =>
  Effect.gen(function*() {
    const queue = makeExecutionQueue(options.concurrency)
    const executions = new Map<string, Execution>()

    /** The execution's place leaves its lane, and whoever waits for it to end is told. */
    const finish = (execution: Execution): void => {
      if (executions.get(execution.runId) === execution) executions.delete(execution.runId)
      queue.leave(execution.place)
      for (const told of execution.ended.splice(0)) told()
    }

    /** Ends the run's execution here: interrupts it, or takes it out of its lane if it has not started. */
    const stop = (runId: string): Effect.Effect<void> =>
      Effect.suspend(() => {
        const execution = executions.get(runId)
        if (execution === undefined) return Effect.void
        if (execution.fiber !== undefined) return Effect.asVoid(Fiber.interrupt(execution.fiber))
        finish(execution)
        return execution.claimed === undefined ? Effect.void : options.letGo(execution.claimed)
      })

    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        queue.close()
        return Effect.forEach([...executions.keys()], stop, { concurrency: "unbounded", discard: true })
      })
    )

    /**
     * Puts the run at the back of its conversation's lane, or at the `place` its submission took
     * with `claimed`, the conversation's lease (held already, `undefined` when another executor
     * held it).
     */
    const schedule = (run: RunRecord, submitted?: { readonly place: Place; readonly claimed: Lease | undefined }): Effect.Effect<void> =>
      Effect.suspend(() => {
        const claimed = submitted?.claimed
        const place = submitted?.place ?? queue.enter(run.conversationId)
        const execution: Execution = { runId: run.id, place, claimed, fiber: undefined, ended: [] }
        const earlier = executions.get(run.id)
        executions.set(run.id, execution)
        // Whoever waits for the run's end waits for the later execution's.
        if (earlier !== undefined) execution.ended.push(...earlier.ended.splice(0))
        // Scheduled again while an earlier execution is still here: the later one is the run's, and
        // a lease the earlier one's submission took is given up (the later one claims its own).
        let given: Lease | undefined
        if (earlier?.fiber !== undefined) earlier.fiber.unsafeInterruptAsFork(FiberId.none)
        else if (earlier !== undefined) {
          finish(earlier)
          given = earlier.claimed
        }
        const taken = queue.schedule(place, () => {
          const fiber = options.fork(run, claimed)
          execution.fiber = fiber
          fiber.addObserver(() => finish(execution))
        })
        const earlierLease = given === undefined ? Effect.void : options.letGo(given)
        if (taken) return earlierLease
        // Refused while shutting down: the run stays as stored, resumed later; its lease goes.
        finish(execution)
        return Effect.zipRight(earlierLease, claimed === undefined ? Effect.void : options.letGo(claimed))
      })

    /** Waits until the run's execution in this process has ended; at once when it executes elsewhere. */
    const awaitHere = (runId: string) =>
      Effect.async<void>((resume) => {
        const execution = executions.get(runId)
        if (execution === undefined) return resume(Effect.void)
        const told = () => resume(Effect.void)
        execution.ended.push(told)
        // The run's execution now: a later one took the waiters of the run scheduled again.
        return Effect.sync(() => {
          const waiting = executions.get(runId)?.ended ?? execution.ended
          const at = waiting.indexOf(told)
          if (at >= 0) waiting.splice(at, 1)
        })
      })

    return {
      /** Whether the conversation has a run here, executing or waiting. */
      busy: queue.busy,
      /** The back of the conversation's lane, taken before its run is written; `schedule` it, or `leave` it. */
      enter: queue.enter,
      leave: queue.leave,
      schedule,
      stop,
      awaitHere,
      /** Whether the run is executing, or waiting in a lane, in this process. */
      isHere: (runId: string) => executions.has(runId),
      /** How many runs execute, or wait in a lane, in this process. */
      count: () => executions.size
    }
  })

/** A process's executions, as `makeExecutions` makes them. */
export type Executions = Effect.Effect.Success<ReturnType<typeof makeExecutions>>
