/**
 * Approvals as the dispatcher applies them: a person's decision (or an expiry) applied once, the
 * conversation grant written in the same transaction, `approval.decided`, and the waiting run
 * resumed. Approvals expire fail-closed: one fiber sleeps until the soonest pending approval
 * expires (re-armed from the store on boot), woken when a run suspends on a new one. Asking is the
 * engine's part (`engine/approvalGate.ts`).
 */
import { Clock, Duration, Effect, Option, Queue } from "effect"
import { ApprovalStorage } from "../durable/ApprovalStorage.js"
import type { ApprovalRecord, RunRecord, RunStatus } from "../durable/records.js"
import { Store } from "../durable/Store.js"
import type { StoreError } from "../durable/StoreError.js"
import { EventLog } from "../events/EventLog.js"
import { withEventRelease } from "../journal/eventRelease.js"
import { eventOf } from "../journal/trace.js"
import { ApprovalAlreadyDecided, ApprovalNotFound, type ApprovalScope } from "./Dispatcher.js"

/** Why the pending approvals of a run that ended with `status` are closed: a late decider reads it. */
export const endedBeforeDecision = (status: RunStatus): string =>
  status === "cancelled" ? "the run was cancelled before a decision" : `the run ended (${status}) before a decision`

/** Why an approval expired. */
const expiredWithoutDecision = "no decision before the approval expired"

/** Decisions on approvals, for a dispatcher that resumes runs with `resume`; the expiry fiber runs in the current scope. */
export const makeApprovalDecisions = (resume: (run: RunRecord) => Effect.Effect<void>) =>
  Effect.gen(function*() {
    const approvals = yield* ApprovalStorage
    const store = yield* Store
    const events = yield* EventLog
    const asked = yield* Queue.sliding<void>(1)

    /** Applies a decision (or an expiry) to a pending approval and, `resuming`, resumes its run. */
    const apply = (
      approvalId: string,
      status: "approved" | "denied" | "expired",
      reason: string | undefined,
      scope: ApprovalScope = "once",
      resuming = true
    ): Effect.Effect<ApprovalRecord, ApprovalNotFound | ApprovalAlreadyDecided | StoreError> =>
      Effect.gen(function*() {
        const approval = yield* approvals.get(approvalId)
        if (Option.isNone(approval)) {
          return yield* new ApprovalNotFound({ approvalId, message: `there is no approval "${approvalId}"` })
        }
        const run = yield* store.getRun(approval.value.runId)
        const granted = status === "approved" && scope === "conversation" && Option.isSome(run)
        const decided = yield* approvals.decide(
          approvalId,
          status,
          reason,
          granted && Option.isSome(run) ? { conversationId: run.value.conversationId } : undefined
        )
        if (Option.isNone(decided)) {
          let now = yield* approvals.get(approvalId)
          // Still pending, so its time was up before any expiry here looked (another process asked
          // for it): expired now, as the expiry would have, and the decision told so.
          if (status !== "expired" && Option.isSome(now) && now.value.status === "pending") {
            yield* apply(approvalId, "expired", expiredWithoutDecision).pipe(Effect.catchTag("ApprovalAlreadyDecided", () => Effect.void))
            now = yield* approvals.get(approvalId)
          }
          const was = Option.match(now, { onNone: () => "decided", onSome: (a) => a.status })
          // Why it was closed (its run's cancel, an expiry, the person before): a late decider reads it here.
          const why = Option.match(now, { onNone: () => null, onSome: (a) => a.reason })
          return yield* new ApprovalAlreadyDecided({
            approvalId,
            status: was,
            message: `approval "${approvalId}" is already ${was}${why === null ? "" : ` (${why})`}; a decision applies once`
          })
        }
        if (Option.isSome(run)) {
          yield* events.emit(eventOf(run.value, "approval.decided", {
            approvalId,
            toolCallId: decided.value.toolCallId,
            tool: decided.value.tool,
            status,
            ...(granted ? { scope } : {}),
            ...(reason === undefined ? {} : { reason })
          }, `approval:${decided.value.toolCallId}`, `tool:${decided.value.toolCallId}`)).pipe(withEventRelease(run.value.release))
          if (resuming) {
            // Read again now that the decision is stored: a run that was suspending as it was read
            // is suspended now, or reads the decision itself (engine/suspendOnApproval.ts).
            const now = yield* store.getRun(run.value.id)
            if (Option.isSome(now) && now.value.status === "suspended") yield* resume(now.value)
          }
        }
        return decided.value
      })

    yield* Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      let soonest: number | undefined
      for (const approval of yield* approvals.list({ status: "pending" })) {
        if (approval.expiresAt <= now) {
          yield* apply(approval.id, "expired", expiredWithoutDecision).pipe(
            Effect.catchTag("ApprovalAlreadyDecided", () => Effect.void)
          )
        } else if (soonest === undefined || approval.expiresAt < soonest) {
          soonest = approval.expiresAt
        }
      }
      const delay = soonest === undefined ? Duration.minutes(10) : Duration.millis(soonest - now)
      yield* Effect.race(Effect.sleep(Duration.min(delay, Duration.minutes(10))), Queue.take(asked))
    }).pipe(
      Effect.catchAllCause((cause) => Effect.zipRight(Effect.logWarning("approval expiry check failed", cause), Effect.sleep("1 second"))),
      Effect.forever,
      Effect.forkScoped
    )

    return {
      /** Applies a person's decision. */
      decide: apply,
      /**
       * Expires the pending approvals of a run that ends without them (cancelled, steered), saying
       * why: nobody may approve a call that will never run, and a later decision gets a 409. The run
       * is not resumed: it is ending.
       */
      closeFor: (runId: string, reason: string) =>
        Effect.gen(function*() {
          for (const approval of yield* approvals.list({ status: "pending", runId })) {
            yield* apply(approval.id, "expired", reason, "once", false).pipe(
              Effect.catchTags({ ApprovalAlreadyDecided: () => Effect.void, ApprovalNotFound: () => Effect.void })
            )
          }
        }),
      /** Says that a run suspended on a new approval, so its expiry is armed. */
      asked: Queue.offer(asked, undefined)
    }
  })
