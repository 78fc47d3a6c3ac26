/**
 * A run suspended on an approval (a tool's gate, a budget gone past). The approval is stored with
 * the run's status (the step holds it, with its request), its lease still held; a decision may
 * come before the run reads it again, its decider reading the run as it was before the decision is
 * stored. So the run then reads the approval (one of the two sees the other). Still pending,
 * `run.suspended` goes with its lease, let go; decided meanwhile, the run goes on at once, and its
 * followers were never told it waited.
 */
import { Effect, Option } from "effect"
import { ApprovalStorage } from "../durable/ApprovalStorage.js"
import type { StepBuffer } from "./StepBuffer.js"

/** The approval a run waits on, as its `run.suspended` event says it. */
export type ApprovalSuspension =
  | { readonly reason: "approval"; readonly approvalId: string; readonly tool: string }
  | { readonly reason: "budget"; readonly approvalId: string; readonly tool: string; readonly budget: string }

/**
 * Suspends the run on `suspension`'s approval: `suspended` once its lease is let go for whoever
 * the decision wakes it in, or `decided` when the decision came meanwhile (the run running again,
 * its lease still held: its caller asks the gate again). Not interrupted between its two writes:
 * a run left suspended with its lease held and no `run.suspended` is what only a crash leaves.
 */
export const suspendOnApproval = (step: StepBuffer, suspension: ApprovalSuspension) =>
  Effect.uninterruptible(Effect.gen(function*() {
    yield* step.commit({ status: { status: "suspended" } })
    const approval = yield* (yield* ApprovalStorage).get(suspension.approvalId)
    // Stored by the step just written, unless the call had one already, which the gate would have found.
    if (Option.isNone(approval)) {
      return yield* Effect.dieMessage(`approval ${suspension.approvalId} (${suspension.tool}) was not stored with the run's suspension: the call had another`)
    }
    if (approval.value.status === "pending") {
      step.emit("run.suspended", "run", suspension)
      yield* step.commit({ releaseLease: true })
      return "suspended" as const
    }
    yield* step.commit({ status: { status: "running" } })
    return "decided" as const
  }))
