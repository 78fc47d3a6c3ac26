/**
 * OpenTelemetry export: when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, every finished span of the
 * event log (a run, a model turn, a tool call, an approval) is sent as OTLP/HTTP JSON to
 * `<endpoint>/v1/traces`, with the event log's own trace and span ids, so the tree an OTel backend
 * draws is the inspector's. Model turns carry the GenAI semantic-convention attributes. A span is
 * exported once, when its step ends: a run that suspends and resumes keeps one span (its id is
 * derived from the run), with each suspension and resumption as a span event.
 */
import { Clock, Config, Duration, Effect, Layer, Option, Schedule, Stream } from "effect"
import { EventLog } from "./EventLog.js"
import type { FoundryEvent } from "./FoundryEvent.js"

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

const starts: Partial<Record<FoundryEvent["type"], (event: FoundryEvent) => { name: string; attributes: Attributes }>> = {
  "run.started": (e) => ({ name: `run ${e.agent}`, attributes: { "foundry.run.id": e.runId, "foundry.agent": e.agent, "foundry.instance": e.instanceId } }),
  "run.resumed": (e) => ({ name: `run ${e.agent}`, attributes: { "foundry.run.id": e.runId, "foundry.agent": e.agent, "foundry.resumed": "true" } }),
  "model.turn.started": (e) => {
    const model = String(e.data.model ?? "")
    return {
      name: `chat ${model}`,
      attributes: { "gen_ai.operation.name": "chat", "gen_ai.system": model.split(":")[0] ?? model, "gen_ai.request.model": model.split(":").slice(1).join(":") || model }
    }
  },
  "tool.call.started": (e) => ({ name: `execute_tool ${String(e.data.tool)}`, attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": String(e.data.tool) } }),
  "approval.requested": (e) => ({ name: `approval ${String(e.data.tool)}`, attributes: { "foundry.approval.id": String(e.data.approvalId) } })
}

/** The string fields of an event's data named in `keys`, as the attributes `keys` maps them to. */
const stringAttributes = (data: FoundryEvent["data"], keys: Readonly<Record<string, string>>): Attributes => {
  const picked: Attributes = {}
  for (const [field, key] of Object.entries(keys)) {
    const value = data[field]
    if (typeof value === "string") picked[key] = value
  }
  return picked
}

/**
 * Events recorded as span events on their open span. A suspension does not end the run's span:
 * the resumed run has the same span id, and a backend would see two spans with one id.
 */
const marks: Partial<Record<FoundryEvent["type"], (event: FoundryEvent) => Attributes>> = {
  "run.suspended": (e) =>
    stringAttributes(e.data, {
      reason: "foundry.suspended.reason",
      tool: "gen_ai.tool.name",
      approvalId: "foundry.approval.id",
      childRunId: "foundry.child_run.id"
    }),
  "run.resumed": () => ({})
}

const ends: ReadonlySet<FoundryEvent["type"]> = new Set([
  "run.completed", "run.failed", "run.cancelled", "model.turn.completed", "tool.call.completed", "tool.call.failed", "approval.decided"
])

/** Turns the event stream into finished OTLP spans, each exported once, when its step ends. */
export const spanBuilder = () => {
  const open = new Map<string, OpenSpan>()
  return (event: FoundryEvent): ReadonlyArray<OtlpSpan> => {
    const span = open.get(event.spanId)
    const mark = marks[event.type]
    if (span !== undefined && mark !== undefined) {
      open.set(event.spanId, { ...span, marks: [...span.marks, { name: event.type, time: event.time, attributes: mark(event) }] })
      return []
    }
    const start = starts[event.type]
    if (start !== undefined) {
      // Also a run resumed by a process that did not see it start (a restart): its span begins here.
      const { attributes, name } = start(event)
      open.set(event.spanId, { traceId: event.traceId, spanId: event.spanId, parentSpanId: event.parentSpanId, name, start: event.time, attributes, marks: [] })
      return []
    }
    if (!ends.has(event.type) || span === undefined) return []
    open.delete(event.spanId)
    const usage = event.data.usage
    const usageAttributes: Record<string, number> = typeof usage === "object" && usage !== null && "inputTokens" in usage && "outputTokens" in usage
      ? { "gen_ai.usage.input_tokens": Number(usage.inputTokens), "gen_ai.usage.output_tokens": Number(usage.outputTokens) }
      : {}
    const failed = event.type === "run.failed" || event.type === "tool.call.failed" || (event.type === "approval.decided" && event.data.status !== "approved")
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
      status: failed ? { code: 2, message: String(event.data.error ?? event.data.status ?? "failed") } : { code: 1 }
    }]
  }
}

const post = (endpoint: string, spans: ReadonlyArray<OtlpSpan>) =>
  Effect.tryPromise(() =>
    fetch(`${endpoint.replace(/\/$/, "")}/v1/traces`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        resourceSpans: [{
          resource: { attributes: [{ key: "service.name", value: { stringValue: "foundry" } }] },
          scopeSpans: [{ scope: { name: "foundry" }, spans }]
        }]
      })
    })
  ).pipe(Effect.retry(Schedule.exponential("200 millis").pipe(Schedule.intersect(Schedule.recurs(3)))), Effect.ignoreLogged)

/** Exports spans while `OTEL_EXPORTER_OTLP_ENDPOINT` is set; does nothing otherwise. */
export const OtlpExportLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const endpoint = yield* Config.option(Config.string("OTEL_EXPORTER_OTLP_ENDPOINT")).pipe(Effect.orDie)
    if (Option.isNone(endpoint)) return
    const events = yield* EventLog
    const build = spanBuilder()
    const now = yield* Clock.currentTimeMillis
    yield* events.follow({ since: now }, 0).pipe(
      Stream.mapConcat(build),
      Stream.groupedWithin(256, Duration.seconds(1)),
      Stream.runForEach((chunk) => post(endpoint.value, [...chunk])),
      Effect.catchAllCause((cause) => Effect.logWarning("OpenTelemetry export stopped", cause)),
      Effect.forkScoped
    )
  })
)
