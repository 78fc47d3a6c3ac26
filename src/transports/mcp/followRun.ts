/**
 * Follows a submitted run until a caller can be answered: the run ended (completed, failed,
 * cancelled), or it is parked on an approval that is still pending, its own or one of a run it
 * waits on (a subagent's, which would otherwise hold the caller until the approval expires).
 */
import { Data, Effect, Option, Stream } from "effect"
import { ApprovalStorage } from "../../durable/ApprovalStorage.js"
import type { ApprovalRecord, RunRecord } from "../../durable/records.js"
import { Store } from "../../durable/Store.js"
import { EventLog } from "../../events/EventLog.js"
import type { FoundryEvent } from "../../events/FoundryEvent.js"
import { firstApprovalBelow, pendingApprovalOf } from "../approvalsBelow.js"

/** Where a followed run stands when its caller is answered. */
export type RunOutcome = Data.TaggedEnum<{
  /** The run ended: completed, failed or cancelled (see `run.status`). */
  Ended: { readonly run: RunRecord }
  /** The run waits for a person's decision on `approval`. */
  AwaitingApproval: { readonly run: RunRecord; readonly approval: ApprovalRecord }
}>

/** Constructors of `RunOutcome`. */
export const RunOutcome = Data.taggedEnum<RunOutcome>()

/** Follows run `runId`, handing each of its events to `onEvent`, until its caller can be answered. */
export const followRun = Effect.fn("followRun")(function*(runId: string, onEvent: (event: FoundryEvent) => Effect.Effect<void>) {
  const events = yield* EventLog
  const approvals = yield* ApprovalStorage
  const store = yield* Store
  const own = events.runEvents(runId).pipe(
    Stream.tap(onEvent),
    Stream.mapEffect((event) => pendingApprovalOf(event, approvals)),
    Stream.filterMap((pending) => pending),
    Stream.runHead
  )
  // A subagent's run (or its subagent's) that stops for a person stops the caller's wait too.
  const approval = yield* Effect.raceFirst(own, Effect.map(firstApprovalBelow(runId, { events, approvals }), Option.some))
  const run = yield* store.getRun(runId)
  if (Option.isNone(run)) return yield* Effect.dieMessage(`run ${runId} was followed to its end but is not in the store`)
  return Option.match(approval, {
    onNone: () => RunOutcome.Ended({ run: run.value }),
    onSome: (pending) => RunOutcome.AwaitingApproval({ run: run.value, approval: pending })
  })
})
