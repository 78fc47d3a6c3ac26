/**
 * A run suspended on an approval (a tool's gate, a budget gone past). Its decision may come while
 * the suspension is written: its decider then reads the run as running and leaves it to go on. So
 * the run's status is stored first (with what the step holds, its approval's request among it),
 * its lease still held; then it reads the approval (the decider reads the run after its decision
 * is stored: one of the two sees the other). Still pending, `run.suspended` goes with its lease,
 * let go; decided meanwhile, the run goes on at once, and its followers were never told it waited.
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
    if (Option.isNone(approval) || approval.value.status === "pending") {
      step.emit("run.suspended", "run", suspension)
      yield* step.commit({ releaseLease: true })
      return "suspended" as const
    }
    yield* step.commit({ status: { status: "running" } })
    return "decided" as const
  }))
