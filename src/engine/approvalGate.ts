/**
 * The approval gate before a tool call: the project's permission rule or the tool's own policy
 * says whether a person must decide; a conversation grant or an earlier decision may already
 * have; otherwise an approval is asked for and the run waits.
 */
import { type Duration, Effect, Option } from "effect"
import type { PermissionRule } from "../definitions/configFields.js"
import type { RunRecord } from "../durable/records.js"
import { ApprovalStorage } from "../durable/ApprovalStorage.js"
import type { ToolCall } from "../models/Model.js"
import { askForApproval } from "./askForApproval.js"
import { approvalPolicy, type DecodedCall } from "./executeTool.js"
import type { StepBuffer } from "./StepBuffer.js"

/** What the gate decided: run the call, answer it as refused, or wait for a person. */
export type Gate =
  | { readonly _tag: "Proceed" }
  | { readonly _tag: "Refused"; readonly reason: string }
  | { readonly _tag: "Wait"; readonly approvalId: string }

/** Passes `call` through the gate; events go into the run's pending `step`. */
export const approvalGate = Effect.fnUntraced(function*(
  run: RunRecord,
  step: StepBuffer,
  call: ToolCall,
  decoded: DecodedCall,
  rule: PermissionRule | undefined,
  approvalTimeout: Duration.DurationInput,
  hide: (value: unknown) => unknown
) {
  const policy = rule === undefined ? approvalPolicy(decoded) : { asks: rule.action === "ask" }
  if (!policy.asks) return { _tag: "Proceed" } satisfies Gate
  if (policy.broke !== undefined) {
    yield* Effect.logWarning(
      `the approval policy of tool ${call.name}${decoded.tool.file === undefined ? "" : ` (${decoded.tool.file})`} threw on call ${call.id} ` +
        `of run ${run.id}: ${policy.broke}; a person decides the call, as for a policy that asks: fix the policy so that it returns true or false`
    )
  }
  const approvals = yield* ApprovalStorage
  const toolSpan = `tool:${call.id}`
  const approval = yield* approvals.find(run.id, call.id)
  if (Option.isNone(approval)) {
    const grant = yield* approvals.findGrant(run.conversationId, call.name)
    if (Option.isSome(grant)) {
      // Approved for this conversation earlier: no one is asked again.
      step.emit("approval.decided", `approval:${call.id}`, {
        toolCallId: call.id,
        tool: call.name,
        status: "approved",
        grantedBy: grant.value.approvalId
      }, toolSpan)
      return { _tag: "Proceed" } satisfies Gate
    }
  }
  if (Option.isNone(approval) || approval.value.status === "pending") {
    // A new one is stored with the step that suspends the run on it, its request among that step's events.
    const asked = Option.isSome(approval)
      ? approval.value
      : yield* askForApproval(step, run, { toolCallId: call.id, tool: call.name, input: decoded.rawInput }, approvalTimeout)
    // Found pending while the run is not suspended: asked for, unfenced, by a version that stored an
    // approval before its step, whose suspension was never recorded; nor was its request, so it is now.
    if (Option.isNone(approval) || run.status !== "suspended") {
      step.emit("approval.requested", `approval:${call.id}`, {
        approvalId: asked.id,
        toolCallId: call.id,
        tool: call.name,
        input: hide(decoded.rawInput),
        expiresAt: asked.expiresAt
      }, toolSpan)
    }
    return { _tag: "Wait", approvalId: asked.id } satisfies Gate
  }
  const decided = approval.value
  if (decided.status === "approved") return { _tag: "Proceed" } satisfies Gate
  return {
    _tag: "Refused",
    reason: decided.status === "expired"
      ? `the approval for ${call.name} expired before anyone decided; the call was not made`
      : `a person denied this call to ${call.name}${decided.reason === null ? "" : `: ${decided.reason}`}`
  } satisfies Gate
})
