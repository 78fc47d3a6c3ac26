/**
 * Ending a run with tool calls still open (it was cancelled, steered, or failed between a call
 * and its result) answers each of them, with a result that says why it never came, so that the
 * conversation's transcript stays valid for every later message. The answers are part of the
 * step that ends the run.
 */
import type { RunRecord } from "../durable/records.js"
import type { EventDraft } from "../events/EventLog.js"
import { eventOf } from "../journal/trace.js"
import type { ChatMessage } from "../models/Model.js"
import { type JournalEntry, openCalls } from "./transcript.js"

/**
 * The results (and their `tool.call.failed` events) that answer every call of `run` left open in
 * `stored` with `reason`, at `now`: a call lasted from its model turn's answer, when that is
 * stored, until now.
 */
export const closeOpenCalls = (
  run: RunRecord,
  stored: ReadonlyArray<JournalEntry>,
  reason: string,
  now: number
): { readonly messages: ReadonlyArray<ChatMessage>; readonly events: ReadonlyArray<EventDraft> } => {
  const calls = openCalls(stored, run.id)
  return {
    messages: calls.map(({ call }): ChatMessage => ({ _tag: "tool", toolCallId: call.id, name: call.name, content: reason })),
    events: calls.map(({ askedAt, call }) =>
      eventOf(run, "tool.call.failed", {
        toolCallId: call.id,
        tool: call.name,
        error: reason,
        durationMs: askedAt === undefined ? 0 : Math.max(0, now - askedAt)
      }, `tool:${call.id}`)
    )
  }
}
