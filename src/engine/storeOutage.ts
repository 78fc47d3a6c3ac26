/**
 * A run's execution outlasting a store that does not take its steps for a while (PostgreSQL
 * restarting or failing over, connections cut, a write lock held elsewhere): instead of failing
 * the run, the execution is taken again once the store answers, from what the store holds, as
 * after a restart. A failed step wrote nothing, so nothing is written twice; a tool call whose
 * result was not recorded runs again, as the journal's rule is.
 */
import { Clock, Duration, Effect } from "effect"
import { StoreError } from "../durable/StoreError.js"

/** How long one outage is waited out before the run is given up. */
const patience = Duration.toMillis(Duration.minutes(1))

/** The wait before attempt `n` of an outage: none before the first, then 200 ms doubling to 5 s. */
const delayBefore = (attempt: number): Duration.Duration =>
  attempt === 0 ? Duration.zero : Duration.millis(Math.min(200 * 2 ** (attempt - 1), 5_000))

/** An outage: when its first failure came, how many attempts it has had, and the steps written by then. */
interface Outage {
  readonly since: number
  readonly attempts: number
  readonly writtenBefore: number
}

/**
 * `attempt` taken again while it fails with a `StoreError`. An outage lasts from a failure until
 * a step is written: an execution that writes steps between two failures meets a new outage,
 * with the whole wait again. After a minute of one outage, `giveUp` ends the run. Nothing is set
 * up before the first failure: a retry's schedule would cost every run that never needs it.
 */
export const outlastStoreOutages = <A, E, R>(options: {
  readonly runId: string
  readonly attempt: Effect.Effect<A, E | StoreError, R>
  /** How many steps of the run have been written in this process so far. */
  readonly written: () => number
  readonly giveUp: (error: StoreError) => Effect.Effect<A, E | StoreError, R>
}): Effect.Effect<A, E | StoreError, R> => {
  const { attempt, giveUp, runId, written } = options
  const refused = (error: StoreError) =>
    Effect.logWarning(`run ${runId}: the store did not take a step (${error.message}); it goes on from what the store holds`)
  const outlasting = (outage: Outage | undefined): Effect.Effect<A, E | StoreError, R> =>
    Effect.catchIf(
      attempt,
      (error): error is StoreError => error instanceof StoreError,
      (error) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const ongoing = outage !== undefined && written() === outage.writtenBefore
            ? outage
            : { since: now, attempts: 0, writtenBefore: written() }
          yield* refused(error)
          if (now - ongoing.since >= patience) return yield* giveUp(error)
          yield* Effect.sleep(delayBefore(ongoing.attempts))
          return yield* outlasting({ ...ongoing, attempts: ongoing.attempts + 1 })
        })
    )
  return outlasting(undefined)
}
