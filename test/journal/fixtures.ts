/**
 * Runs, events and messages for the journal and store tests.
 */
import type { Context } from "effect"
import type { EventDraft } from "../../src/events/EventLog.js"
import type { EventContent, EventPayload } from "../../src/events/FoundryEvent.js"
import type { NewRun } from "../../src/journal/journalRecords.js"
import type { RunJournal } from "../../src/journal/RunJournal.js"
import type { ChatMessage } from "../../src/models/Model.js"

/** A run to submit: agent `shop`, instance `acme`, conversation `c1` unless overridden. */
export const newRun = (
  id: string,
  overrides: Partial<Pick<NewRun, "agent" | "instanceId" | "conversationId" | "idempotencyKey">> = {}
): NewRun => ({
  id,
  agent: overrides.agent ?? "shop",
  instanceId: overrides.instanceId ?? "acme",
  conversationId: overrides.conversationId ?? "c1",
  input: `input of ${id}`,
  release: "dev",
  ...(overrides.idempotencyKey === undefined ? {} : { idempotencyKey: overrides.idempotencyKey })
})

/** Where an event belongs: the run's ids. */
interface RunIds {
  readonly id: string
  readonly agent: string
  readonly instanceId: string
  readonly conversationId: string
}

/** An event of `run`; `id` is its span id, which the tests' event log makes its event id. */
export const draft = (id: string, run: RunIds, content: EventContent): EventDraft => ({
  ...content,
  traceId: `trace-${run.id}`,
  spanId: id,
  parentSpanId: content.type === "run.queued" ? null : `span-root-${run.id}`,
  runId: run.id,
  conversationId: run.conversationId,
  instanceId: run.instanceId,
  agent: run.agent
})

/** Events the tests store, each with a payload of its type's shape (the journal keeps any event as it is). */
export const started: EventContent = { type: "run.started", data: { input: "a message", model: "demo" } }
export const completed: EventContent = { type: "run.completed", data: { output: "done", turns: 1 } }

/**
 * Submits `run` with a `run.queued` event whose id is `queuedId` (default `queued-<run id>`) and
 * whose data is `data` (default: the run's input), in a new conversation unless `newConversation`
 * is false.
 */
export const submit = (
  journal: Context.Tag.Service<RunJournal>,
  run: NewRun,
  options: { readonly newConversation?: boolean; readonly queuedId?: string; readonly data?: EventPayload<"run.queued"> } = {}
) =>
  journal.submit(run, {
    newConversation: options.newConversation ?? true,
    queued: (record) =>
      draft(options.queuedId ?? `queued-${run.id}`, record, { type: "run.queued", data: options.data ?? { input: run.input } })
  })

export const user: ChatMessage = { _tag: "user", content: "Where is order 42?" }
export const assistant: ChatMessage = {
  _tag: "assistant",
  content: "Let me look.",
  toolCalls: [
    { id: "call-1", name: "lookup", arguments: "{\"orderId\":\"42\"}" },
    { id: "call-2", name: "track", arguments: "{}" }
  ]
}
export const tool: ChatMessage = { _tag: "tool", toolCallId: "call-1", name: "lookup", content: "{\"status\":\"shipped\"}" }
