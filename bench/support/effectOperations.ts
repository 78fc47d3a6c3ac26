/**
 * Effect operations, counted: the fiber run loop asks its scheduler whether to yield before each
 * operation it runs, so a scheduler that counts the questions (and is otherwise Effect's default)
 * counts the operations of every fiber that runs with it, the fibers it forks and the runtimes
 * captured from it (the executor's, the HTTP server's). Unlike a time, the count does not move with
 * the machine: a change to a run's path shows in it as it is.
 */
import { Effect, Scheduler } from "effect"

let operations = 0

/** Effect's default scheduler, counting operations. */
const countingScheduler: Scheduler.Scheduler = {
  shouldYield: (fiber) => {
    operations++
    return Scheduler.defaultScheduler.shouldYield(fiber)
  },
  scheduleTask: (task, priority, fiber) => Scheduler.defaultScheduler.scheduleTask(task, priority, fiber)
}

/** `effect` with its operations counted. */
export const countingOperations = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.withScheduler(effect, countingScheduler)

/** The operations counted so far. */
export const operationsSoFar = Effect.sync(() => operations)
