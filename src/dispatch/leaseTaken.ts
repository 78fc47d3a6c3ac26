/**
 * What the log says when this process stops executing a run because the run's conversation lease
 * went elsewhere: found by a step the lease fenced off, or by the lease's renewal. Without it an
 * operator sees a run stop in this process and no reason. A run that ended elsewhere meanwhile (a
 * cancel from another process) is news; one that goes on elsewhere is a warning: another executor
 * took over a lease this process held, so it was thought gone or did not renew the lease in time.
 */
import { type Context, Effect, Either, Option } from "effect"
import { finalStatuses } from "../durable/records.js"
import type { Store } from "../durable/Store.js"

/** Logs why `runId` stopped here, its conversation's lease taken: from the run as stored now. */
export const logLeaseTaken = Effect.fn("Dispatcher.leaseTaken")(function*(store: Context.Tag.Service<Store>, runId: string) {
  const found = yield* Effect.either(store.getRun(runId))
  if (Either.isLeft(found)) {
    return yield* Effect.logWarning(
      `run ${runId}: its conversation's lease was taken from this process, so the run stopped here (the store could not say why: ${found.left.message})`
    )
  }
  const run = Option.getOrUndefined(found.right)
  if (run !== undefined && finalStatuses.has(run.status)) {
    return yield* Effect.logInfo(`run ${runId} ended elsewhere (${run.status}) while this process held its conversation's lease: the run stopped here, having written nothing after that end`)
  }
  yield* Effect.logWarning(
    `run ${runId}: another executor took over its conversation's lease from this process (this process was thought stopped, or did not renew the lease in time): the run stopped here, and the lease's holder goes on with it`
  )
})
