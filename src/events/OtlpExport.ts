/**
 * OpenTelemetry export: when an OTLP endpoint is set (`OtlpSettings`), every finished span of the
 * event log (a run, a model turn, a tool call, an approval) is sent as OTLP/HTTP JSON, with the
 * event log's own trace and span ids, so the tree an OTel backend draws is the inspector's. Model
 * turns carry the GenAI semantic-convention attributes, and what the summary calls of their
 * compaction took (`foundry.summary.*`). A span is exported once, when its step
 * ends: a run that suspends and resumes keeps one span (its id is derived from the run), with each
 * suspension and resumption as a span event. A span's resource carries the release that ran it as
 * `service.version` (`rel_...` built, `dev-...` from sources).
 *
 * Every process on a store (a cluster's runners, two servers on one SQLite file) follows every
 * process's events, so each builds every span; only the process whose event log wrote a span's
 * ending event exports it. A run suspended on one runner and resumed on another is sent once, by
 * the one that ends it, with the start and the marks the other wrote.
 */
import { Clock, Deferred, Effect, Fiber, Layer, Option, Stream } from "effect"
import { EventLog } from "./EventLog.js"
import type { FoundryEvent } from "./FoundryEvent.js"
import { postSpans } from "./otlpRequest.js"
import * as OtlpReport from "./otlpReport.js"
import * as OtlpSettings from "./OtlpSettings.js"
import * as SpanQueue from "./spanQueue.js"

/** Span or span-event attributes before their OTLP encoding. */
type Attributes = Record<string, string | number>

/** Something that happened within a span (a suspension, a resumption). */
interface SpanMark {
  readonly name: string
  readonly time: number
  readonly attributes: Attributes
}

/** A span being built from its events. */
interface OpenSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | null
  readonly name: string
  readonly start: number
  readonly attributes: Attributes
  readonly marks: ReadonlyArray<SpanMark>
}

/** One attribute in OTLP JSON. */
type OtlpAttribute = { readonly key: string; readonly value: { readonly stringValue: string } | { readonly intValue: string } }

/** A finished span, in OTLP JSON. */
interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly startTimeUnixNano: string
  readonly endTimeUnixNano: string
  readonly attributes: ReadonlyArray<OtlpAttribute>
  readonly events: ReadonlyArray<{ readonly name: string; readonly timeUnixNano: string; readonly attributes: ReadonlyArray<OtlpAttribute> }>
  readonly status: { readonly code: number; readonly message?: string }
}

const nanos = (ms: number): string => `${BigInt(Math.round(ms)) * 1_000_000n}`

const attribute = ([key, value]: readonly [string, string | number]): OtlpAttribute =>
  ({ key, value: typeof value === "number" ? { intValue: String(value) } : { stringValue: value } })

/** The name and attributes of the span an event starts, if it starts one. */
const startOf = (event: FoundryEvent): { readonly name: string; readonly attributes: Attributes } | undefined => {
  switch (event.type) {
    case "run.started":
      return { name: `run ${event.agent}`, attributes: { "foundry.run.id": event.runId, "foundry.agent": event.agent, "foundry.instance": event.instanceId } }
    case "run.resumed":
      return { name: `run ${event.agent}`, attributes: { "foundry.run.id": event.runId, "foundry.agent": event.agent, "foundry.resumed": "true" } }
    case "model.turn.started": {
      const model = event.data.model
      return {
        name: `chat ${model}`,
        attributes: { "gen_ai.operation.name": "chat", "gen_ai.system": model.split(":")[0] ?? model, "gen_ai.request.model": model.split(":").slice(1).join(":") || model }
      }
    }
    case "tool.call.started":
      return { name: `execute_tool ${event.data.tool}`, attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": event.data.tool } }
    case "approval.requested":
      return { name: `approval ${event.data.tool}`, attributes: { "foundry.approval.id": event.data.approvalId } }
    default:
      return undefined
  }
}

/**
 * The attributes of the span event an event records on its open span, if it is one. A suspension
 * does not end the run's span: the resumed run has the same span id, and a backend would see two
 * spans with one id.
 */
const markOf = (event: FoundryEvent): Attributes | undefined => {
  switch (event.type) {
    case "run.suspended": {
      const suspended = event.data
      if (suspended.reason === "build") return { "foundry.suspended.reason": suspended.reason, "code.filepath": suspended.file }
      const reason = { "foundry.suspended.reason": suspended.reason, "gen_ai.tool.name": suspended.tool }
      return suspended.reason === "child"
        ? { ...reason, "foundry.child_run.id": suspended.childRunId }
        : { ...reason, "foundry.approval.id": suspended.approvalId }
    }
    case "run.resumed":
      return {}
    default:
      return undefined
  }
}

/** A model turn's attributes with one more summary call of its compaction, and its tokens, counted. */
const withSummary = (attributes: Attributes, usage: { readonly inputTokens: number; readonly outputTokens: number }): Attributes => {
  const sum = (key: string, add: number) => (typeof attributes[key] === "number" ? attributes[key] : 0) + add
  return {
    ...attributes,
    "foundry.summary.calls": sum("foundry.summary.calls", 1),
    "foundry.summary.input_tokens": sum("foundry.summary.input_tokens", usage.inputTokens),
    "foundry.summary.output_tokens": sum("foundry.summary.output_tokens", usage.outputTokens)
  }
}

const ends: ReadonlySet<FoundryEvent["type"]> = new Set([
  "run.completed", "run.failed", "run.cancelled", "model.turn.completed", "tool.call.completed", "tool.call.failed", "approval.decided"
])

/** Why the step an event ends failed, or `undefined` when it did not. */
const failureOf = (event: FoundryEvent): string | undefined => {
  switch (event.type) {
    case "run.failed":
    case "tool.call.failed":
      return event.data.error
    case "approval.decided":
      return event.data.status === "approved" ? undefined : event.data.status
    default:
      return undefined
  }
}

/** Turns the event stream into finished OTLP spans, each exported once, when its step ends. */
export const spanBuilder = () => {
  const open = new Map<string, OpenSpan>()
  return (event: FoundryEvent): ReadonlyArray<OtlpSpan> => {
    const span = open.get(event.spanId)
    if (event.type === "context.summary.completed") {
      // The turn's own usage stays `gen_ai.usage`; what its compaction's summary calls took is summed beside it.
      if (span !== undefined) open.set(event.spanId, { ...span, attributes: withSummary(span.attributes, event.data.usage) })
      return []
    }
    const mark = markOf(event)
    if (span !== undefined && mark !== undefined) {
      open.set(event.spanId, { ...span, marks: [...span.marks, { name: event.type, time: event.time, attributes: mark }] })
      return []
    }
    const start = startOf(event)
    if (start !== undefined) {
      // Also a run resumed by a process that did not see it start (a restart): its span begins here.
      const { attributes, name } = start
      open.set(event.spanId, { traceId: event.traceId, spanId: event.spanId, parentSpanId: event.parentSpanId, name, start: event.time, attributes, marks: [] })
      return []
    }
    if (!ends.has(event.type) || span === undefined) return []
    open.delete(event.spanId)
    const usageAttributes: Attributes = event.type === "model.turn.completed"
      ? { "gen_ai.usage.input_tokens": event.data.usage.inputTokens, "gen_ai.usage.output_tokens": event.data.usage.outputTokens }
      : {}
    const failure = failureOf(event)
    return [{
      traceId: span.traceId,
      spanId: span.spanId,
      ...(span.parentSpanId === null ? {} : { parentSpanId: span.parentSpanId }),
      name: span.name,
      kind: 1,
      startTimeUnixNano: nanos(span.start),
      endTimeUnixNano: nanos(event.time),
      attributes: Object.entries({ ...span.attributes, ...usageAttributes }).map(attribute),
      events: span.marks.map((m) => ({ name: m.name, timeUnixNano: nanos(m.time), attributes: Object.entries(m.attributes).map(attribute) })),
      status: failure === undefined ? { code: 1 } : { code: 2, message: failure }
    }]
  }
}

/** A finished span and the release whose code ran it. */
interface ReleasedSpan {
  readonly release: string
  readonly span: OtlpSpan
}

/** Spans grouped by release: each release is a resource, its id the resource's `service.version`. */
const resourceSpansOf = (resource: Readonly<Record<string, string>>, spans: ReadonlyArray<ReleasedSpan>) => {
  const byRelease = new Map<string, Array<OtlpSpan>>()
  for (const { release, span } of spans) {
    const group = byRelease.get(release) ?? []
    group.push(span)
    byRelease.set(release, group)
  }
  return [...byRelease].map(([release, spans]) => ({
    resource: { attributes: Object.entries({ ...resource, "service.version": release }).map(attribute) },
    scopeSpans: [{ scope: { name: "foundry" }, spans }]
  }))
}

/**
 * Exports spans while an endpoint is set (see `OtlpSettings`); does nothing otherwise. Spans wait
 * in a bounded queue and go in batches, one request at a time, each bounded by the timeout. When
 * the layer's scope closes, what is queued is sent, for at most the timeout, so the spans of a run
 * that ended just before shutdown are not lost.
 */
export const OtlpExportLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const found = yield* OtlpSettings.read
    if (Option.isNone(found)) return
    const settings = found.value
    const events = yield* EventLog
    const queue = yield* SpanQueue.make<ReleasedSpan>(settings.maxQueueSize)
    const report = OtlpReport.make(settings.endpoint)
    const closing = yield* Deferred.make<void>()
    let sending = 0

    const send = (batch: ReadonlyArray<ReleasedSpan>) =>
      Effect.suspend(() => {
        sending = batch.length
        return postSpans(settings, JSON.stringify({ resourceSpans: resourceSpansOf(settings.resource, batch) }))
      }).pipe(
        Effect.matchEffect({
          onFailure: (failure) => report.failed(failure, batch.length),
          onSuccess: Option.match({ onNone: () => report.accepted, onSome: (partial) => report.partial(partial, batch.length) })
        }),
        Effect.ensuring(Effect.sync(() => (sending = 0)))
      )

    // A batch's first span waits up to the schedule delay for others, unless a batch is already full.
    const gathered = Effect.zipRight(
      queue.whenSome,
      Effect.flatMap(queue.size, (size) => size >= settings.maxBatchSize ? Effect.void : Effect.sleep(settings.scheduleDelay))
    )
    // Once closing, what is queued goes at once, and the loop ends when nothing is left.
    const exporting = Effect.gen(function*() {
      while (true) {
        yield* Effect.raceFirst(Deferred.await(closing), gathered)
        const batch = yield* queue.take(settings.maxBatchSize)
        if (batch.length > 0) yield* send(batch)
        else if (yield* Deferred.isDone(closing)) return
      }
    })

    const build = spanBuilder()
    const now = yield* Clock.currentTimeMillis
    // Spans are of stored events: text deltas, which none of them are made of, are not asked for.
    const following = yield* events.follow({ since: now, deltas: false }, 0).pipe(
      Stream.runForEach((event) => {
        // Built from every process's events (a span may start on another), sent by the one whose end it is.
        const spans = build(event)
        if (spans.length === 0 || !events.wroteHere(event)) return Effect.void
        return Effect.forEach(spans, (span) =>
          Effect.flatMap(queue.offer({ release: event.release, span }), (dropped) => dropped ? report.dropped(settings.maxQueueSize) : Effect.void), { discard: true })
      }),
      Effect.catchAllCause((cause) => Effect.logWarning("OpenTelemetry export stopped", cause)),
      Effect.forkScoped
    )
    const exporter = yield* Effect.forkScoped(exporting)

    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        yield* Fiber.interrupt(following)
        yield* Deferred.succeed(closing, undefined)
        const done = yield* Fiber.await(exporter).pipe(Effect.interruptible, Effect.timeout(settings.timeout), Effect.option)
        if (Option.isSome(done)) return
        const unsent = sending + (yield* queue.size)
        yield* Fiber.interrupt(exporter)
        yield* report.shutDown(unsent, settings.timeout)
      })
    )
  })
)
