/**
 * What a run shows the model: the conversation's stored messages (its journal, in arrival
 * order) arranged so that the transcript is valid for the strictest provider whatever happened.
 *
 * - A run sees the conversation as it was when the run started, plus its own steps. Messages
 *   other runs added while it was suspended (on an approval, on a child run) are not part of its
 *   view: its answer continues its own request, and lands after them in the conversation.
 * - Every tool result is placed directly after the assistant message that called it, wherever it
 *   was stored (a call approved later is answered after the messages that came meanwhile). The
 *   first result stored for a call wins: a call closed as cancelled stays cancelled even if an
 *   executor that did not hear of the cancel records a result afterwards.
 * - A call that has no result yet (its run is suspended on an approval or was interrupted) gets a
 *   result that says so, made up for the view and never stored.
 * - The newest compaction (a `summary` message) the run sees replaces every message stored
 *   before its `keepFrom`, shown as a user message at the start.
 */
import type { StoredMessage } from "../durable/Store.js"
import type { ChatMessage, ToolCall } from "../models/Model.js"

/** A message and the run that recorded it; `seq` once the store has given it one. */
export type JournalEntry = Pick<StoredMessage, "runId" | "message"> & { readonly seq?: number; readonly createdAt?: number }

/** The text shown for a call with no stored result; `runId` owns the call. */
export type Unanswered = (call: ToolCall, runId: string) => string

/** The transcript `runId` sends to the model. */
export const modelView = (stored: ReadonlyArray<JournalEntry>, runId: string, unanswered: Unanswered): Array<ChatMessage> => {
  const start = stored.findIndex((m) => m.runId === runId)
  // A result answers the call of the same id made by the same run (ids are unique per run, not
  // always per conversation: scripted models number them per turn).
  const firstResult = new Map<string, ChatMessage>()
  for (const { message, runId: owner } of stored) {
    const key = message._tag === "tool" ? `${owner}:${message.toolCallId}` : undefined
    if (message._tag === "tool" && key !== undefined && !firstResult.has(key)) firstResult.set(key, message)
  }
  // What the run sees: what was stored before it started, and its own steps.
  const seen = (index: number, owner: string): boolean => start < 0 || index < start || owner === runId
  // The newest compaction it sees stands for everything stored before its `keepFrom`: one that
  // another run made while this one was suspended would take this run's own steps with it.
  const summary = stored.findLast((entry, index) => entry.message._tag === "summary" && seen(index, entry.runId))?.message
  const keepFrom = summary?._tag === "summary" ? summary.keepFrom : undefined
  const view: Array<ChatMessage> = summary?._tag === "summary"
    ? [{ _tag: "user", content: `Summary of the earlier conversation (older messages were compacted):\n${summary.content}` }]
    : []
  for (const [index, { message, runId: owner, seq }] of stored.entries()) {
    if (!seen(index, owner)) continue
    if (keepFrom !== undefined && seq !== undefined && seq < keepFrom) continue
    if (message._tag === "tool" || message._tag === "summary") continue
    view.push(message)
    if (message._tag !== "assistant") continue
    for (const call of message.toolCalls) {
      view.push(firstResult.get(`${owner}:${call.id}`) ?? { _tag: "tool", toolCallId: call.id, name: call.name, content: unanswered(call, owner) })
    }
  }
  return view
}

/** `<runId>:<toolCallId>` of every call that has a stored result. */
const answeredCalls = (stored: ReadonlyArray<JournalEntry>): ReadonlySet<string> =>
  new Set(stored.flatMap(({ message, runId }) => message._tag === "tool" ? [`${runId}:${message.toolCallId}`] : []))

/** The calls of `runId`'s assistant messages that have no stored result, each with when its message was stored (when known). */
export const openCalls = (
  stored: ReadonlyArray<JournalEntry>,
  runId: string
): ReadonlyArray<{ readonly call: ToolCall; readonly askedAt: number | undefined }> => {
  const answered = answeredCalls(stored)
  return stored.flatMap(({ createdAt, message, runId: owner }) =>
    owner === runId && message._tag === "assistant"
      ? message.toolCalls.flatMap((call) => answered.has(`${owner}:${call.id}`) ? [] : [{ call, askedAt: createdAt }])
      : []
  )
}

/** The calls of other runs than `runId` that the view of `runId` shows without a stored result. */
export const foreignOpenCalls = (stored: ReadonlyArray<JournalEntry>, runId: string): ReadonlyArray<{ readonly call: ToolCall; readonly runId: string }> => {
  const answered = answeredCalls(stored)
  return stored.flatMap(({ message, runId: owner }) =>
    owner !== runId && message._tag === "assistant"
      ? message.toolCalls.filter((call) => !answered.has(`${owner}:${call.id}`)).map((call) => ({ call, runId: owner }))
      : []
  )
}
