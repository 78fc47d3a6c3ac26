/**
 * The event envelope of DESIGN section 5: every step of every run, correlated. A run is a trace;
 * each model turn and tool call is a span in it.
 */
import { Schema } from "effect"

/** Every event type Foundry records. */
export const EventType = Schema.Literal(
  "run.queued",
  "run.started",
  "run.completed",
  "run.failed",
  "run.cancelled",
  "run.suspended",
  "run.resumed",
  "approval.requested",
  "approval.decided",
  "model.turn.started",
  "model.retry",
  "model.fallback",
  "model.turn.completed",
  "model.delta",
  "tool.call.started",
  "tool.call.completed",
  "tool.call.failed",
  "delivery.received",
  "playbook.matched",
  "playbook.skipped",
  "instance.provisioned",
  "playbook.dispatched",
  "timer.armed",
  "context.compacting",
  "context.compacted",
  "budget.exceeded"
)
export type EventType = typeof EventType.Type

/** One correlated event. */
export const FoundryEvent = Schema.Struct({
  id: Schema.String,
  seq: Schema.Number,
  time: Schema.Number,
  type: EventType,
  traceId: Schema.String,
  spanId: Schema.String,
  parentSpanId: Schema.NullOr(Schema.String),
  runId: Schema.String,
  conversationId: Schema.String,
  instanceId: Schema.String,
  agent: Schema.String,
  release: Schema.String,
  data: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})
export type FoundryEvent = typeof FoundryEvent.Type

/** Event types that are streamed live but never stored (text deltas: the turn keeps the text). */
export const ephemeralTypes: ReadonlySet<EventType> = new Set(["model.delta"])

/** Event types that end a run. */
export const runEndTypes: ReadonlySet<EventType> = new Set(["run.completed", "run.failed", "run.cancelled"])
