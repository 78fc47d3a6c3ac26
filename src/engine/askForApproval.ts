/**
 * A new approval a run asks a person for (a tool's gate, a budget gone past), handed to the run's
 * step: stored with the step that suspends the run on it, under the run's lease.
 */
import { Clock, Duration, Effect } from "effect"
import { newId } from "../durable/ids.js"
import type { RunRecord } from "../durable/records.js"
import type { NewApproval } from "../journal/journalRecords.js"
import type { StepBuffer } from "./StepBuffer.js"

/** Asks for an approval of `toolCallId`, expiring `timeout` from now; the approval asked for. */
export const askForApproval = (
  step: StepBuffer,
  run: RunRecord,
  about: { readonly toolCallId: string; readonly tool: string; readonly input: unknown },
  timeout: Duration.DurationInput
): Effect.Effect<NewApproval> =>
  Effect.map(Clock.currentTimeMillis, (now) => {
    const approval: NewApproval = {
      id: newId("apr"),
      runId: run.id,
      toolCallId: about.toolCallId,
      agent: run.agent,
      tool: about.tool,
      input: about.input,
      expiresAt: now + Duration.toMillis(Duration.decode(timeout))
    }
    step.ask(approval)
    return approval
  })
