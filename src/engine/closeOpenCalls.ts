/**
 * Ending a run with tool calls still open (it was cancelled, steered, or failed between a call
 * and its result) answers each of them, with a result that says why it never came, so that the
 * conversation's transcript stays valid for every later message.
 */
import { Effect } from "effect"
import type { RunRecord } from "../durable/records.js"
import { Store } from "../durable/Store.js"
import { EventLog } from "../events/EventLog.js"
import { eventOf } from "./trace.js"
import { openCalls } from "./transcript.js"

/** Records `reason` as the result of every call of `run` that has none. */
export const closeOpenCalls = Effect.fn("engine.closeOpenCalls")(function*(run: RunRecord, reason: string) {
  const store = yield* Store
  const events = yield* EventLog
  const stored = yield* store.listMessages(run.conversationId)
  for (const call of openCalls(stored, run.id)) {
    // Unfenced (no lease): whoever ends the run answers its calls, so a lease cannot be lost here.
    yield* store.appendMessage(run.conversationId, run.id, { _tag: "tool", toolCallId: call.id, name: call.name, content: reason }).pipe(
      Effect.catchTag("LeaseLost", Effect.die)
    )
    yield* events.emit(
      eventOf(run, "tool.call.failed", { toolCallId: call.id, tool: call.name, error: reason, durationMs: 0 }, `tool:${call.id}`)
    )
  }
})
