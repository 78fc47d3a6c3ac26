/**
 * The event envelope of DESIGN section 5: every step of every run, correlated. A run is a trace;
 * each model turn and tool call is a span in it. `FoundryEvent` is a union tagged by `type`: each
 * type's `data` has its own schema (`eventPayloads.ts`), so a reader narrows on `type` and reads
 * typed fields.
 */
import { Schema } from "effect"
import { type EventPayload, eventPayloads } from "./eventPayloads.js"
import { EventType } from "./EventType.js"

export type { EventPayload } from "./eventPayloads.js"
export { EventType } from "./EventType.js"

/** The fields every event has besides `type` and `data`: where it sits in its trace, and whose it is. */
export const EventEnvelope = Schema.Struct({
  id: Schema.String,
  seq: Schema.Number,
  time: Schema.Number,
  traceId: Schema.String,
  spanId: Schema.String,
  parentSpanId: Schema.NullOr(Schema.String),
  runId: Schema.String,
  conversationId: Schema.String,
  instanceId: Schema.String,
  agent: Schema.String,
  release: Schema.String
})
export type EventEnvelope = typeof EventEnvelope.Type

/** `run.queued` -> `RunQueuedEvent`: the name an event type's schema has in the OpenAPI document. */
const identifierOf = (type: EventType) =>
  `${type.split(".").map((word) => `${word.charAt(0).toUpperCase()}${word.slice(1)}`).join("")}Event`

/** The schema of events of type `type`. */
const eventOfType = <T extends EventType>(type: T) =>
  Schema.Struct({ ...EventEnvelope.fields, type: Schema.Literal(type), data: eventPayloads[type] }).annotations({
    identifier: identifierOf(type)
  })

/** One correlated event, tagged by `type`. */
export const FoundryEvent = Schema.Union(
  eventOfType("run.queued"),
  eventOfType("run.started"),
  eventOfType("run.completed"),
  eventOfType("run.failed"),
  eventOfType("run.cancelled"),
  eventOfType("run.suspended"),
  eventOfType("run.resumed"),
  eventOfType("approval.requested"),
  eventOfType("approval.decided"),
  eventOfType("model.turn.started"),
  eventOfType("model.retry"),
  eventOfType("model.fallback"),
  eventOfType("model.turn.completed"),
  eventOfType("model.delta"),
  eventOfType("tool.call.started"),
  eventOfType("tool.call.completed"),
  eventOfType("tool.call.failed"),
  eventOfType("delivery.received"),
  eventOfType("playbook.matched"),
  eventOfType("playbook.skipped"),
  eventOfType("playbook.failed"),
  eventOfType("instance.provisioned"),
  eventOfType("instance.created"),
  eventOfType("instance.updated"),
  eventOfType("instance.paused"),
  eventOfType("instance.resumed"),
  eventOfType("instance.archived"),
  eventOfType("instance.installed"),
  eventOfType("instance.uninstalled"),
  eventOfType("installation.skipped"),
  eventOfType("playbook.dispatched"),
  eventOfType("timer.armed"),
  eventOfType("context.compacting"),
  eventOfType("context.compacted"),
  eventOfType("context.uncompacted"),
  eventOfType("context.summary.completed"),
  eventOfType("budget.exceeded")
)
export type FoundryEvent = typeof FoundryEvent.Type

// Every event type is a member of the union: when one is missing, tsc names it here.
type Unlisted = Exclude<EventType, FoundryEvent["type"]>
const everyTypeListed: [Unlisted] extends [never] ? true : Unlisted = true
void everyTypeListed

/** An event of type `T`, without the envelope fields `Omitted` (a draft lacks what the log stamps). */
export type EventOf<T extends EventType, Omitted extends keyof EventEnvelope = never> =
  & Omit<EventEnvelope, Omitted>
  & { readonly type: T; readonly data: EventPayload<T> }

/**
 * An event of one of the types `T` (default: any type) without the envelope fields `Omitted`:
 * one member per type, so `type` still says what `data` is. It is a mapped type indexed by `T`
 * (TypeScript's pattern for correlated unions) so that a function generic over `T` can return
 * one: its body builds an `EventOf<T>`, and a caller with one type gets that type's member.
 */
export type AnyEvent<Omitted extends keyof EventEnvelope = never, T extends EventType = EventType> = {
  readonly [U in T]: EventOf<U, Omitted>
}[T]

/**
 * `event` (a draft, or an event not yet numbered) with the envelope fields the log adds, as a new
 * event: built field by field, in the order of a draft's fields and then the log's. Spreading it
 * instead (`{ ...draft, id, time, release }`) took V8 about 5 µs per event, a hundred times this,
 * on every event of every run.
 */
export const withEnvelope = <T extends EventType>(
  event: AnyEvent<"id" | "seq" | "time" | "release", T>,
  stamp: { readonly id: string; readonly time: number; readonly release: string; readonly seq: number }
): AnyEvent<never, T> => ({
  type: event.type,
  traceId: event.traceId,
  spanId: event.spanId,
  parentSpanId: event.parentSpanId,
  runId: event.runId,
  conversationId: event.conversationId,
  instanceId: event.instanceId,
  agent: event.agent,
  data: event.data,
  id: stamp.id,
  time: stamp.time,
  release: stamp.release,
  seq: stamp.seq
})

/** An event's type and data alone, one member per type: what an emitter says before it adds the envelope. */
export type EventContent = AnyEvent<keyof EventEnvelope>

/** Event types that are streamed live but never stored (text deltas: the turn keeps the text). */
export const ephemeralTypes: ReadonlySet<EventType> = new Set(["model.delta"])

/** Event types that end a run. */
export const runEndTypes: ReadonlySet<EventType> = new Set(["run.completed", "run.failed", "run.cancelled"])
