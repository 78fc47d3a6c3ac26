/**
 * What the log says when this process stops executing a run because the run's conversation lease
 * went elsewhere: found by a step the lease fenced off, or by the lease's renewal. Without it an
 * operator sees a run stop in this process and no reason. A run cancelled elsewhere meanwhile (a
 * cancel from another process) is news; any other is a warning: another executor took over a lease
 * this process held (it was thought gone, or did not renew the lease in time), and goes on with the
 * run, or has ended it.
 */
import { type Context, Effect, Either, Option } from "effect"
import { finalStatuses } from "../durable/records.js"
import type { Store } from "../durable/Store.js"

const tookOver =
  "another executor took over its conversation's lease from this process (this process was thought stopped, or did not renew the lease in time)"

/** Logs why `runId` stopped here, its conversation's lease taken: from the run as stored now. */
export const logLeaseTaken = Effect.fn("Dispatcher.leaseTaken")(function*(store: Context.Tag.Service<Store>, runId: string) {
  const found = yield* Effect.either(store.getRun(runId))
  if (Either.isLeft(found)) {
    return yield* Effect.logWarning(
      `run ${runId}: its conversation's lease was taken from this process, so the run stopped here (the store could not say why: ${found.left.message})`
    )
  }
  const status = Option.getOrUndefined(found.right)?.status
  if (status === "cancelled") {
    return yield* Effect.logInfo(`run ${runId} was cancelled elsewhere while this process held its conversation's lease: the run stopped here, having written nothing after the cancel`)
  }
  if (status !== undefined && finalStatuses.has(status)) {
    return yield* Effect.logWarning(`run ${runId}: ${tookOver}, and has ended the run (${status}): the run stopped here`)
  }
  yield* Effect.logWarning(`run ${runId}: ${tookOver}: the run stopped here, and the lease's holder goes on with it`)
})
