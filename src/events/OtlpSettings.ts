/**
 * Where and how the OTLP exporter sends spans, read from the standard OpenTelemetry variables
 * (https://opentelemetry.io/docs/specs/otel/protocol/exporter/ and the SDK's environment
 * variables). As the specification asks, an empty variable is unset, and a value that cannot be
 * read is named in a warning and its default used: tracing is never a reason not to start.
 */
import { Config, Duration, Effect, Option, Redacted } from "effect"

/** How a request's body is sent: as it is, or gzip-compressed (`Content-Encoding: gzip`). */
export type OtlpCompression = "gzip" | "none"

/** The exporter's settings; `None` from `read` when no endpoint is set, or the SDK is disabled. */
export interface OtlpSettings {
  /** The URL spans are posted to. */
  readonly endpoint: string
  /** Extra request headers (an API key for a hosted backend). */
  readonly headers: Readonly<Record<string, string>>
  /** How each request's body is sent. */
  readonly compression: OtlpCompression
  /** How long one request may take before it is given up. */
  readonly timeout: Duration.Duration
  /** The resource's attributes, `service.name` among them; `service.version` is each span's release. */
  readonly resource: Readonly<Record<string, string>>
  /** How many finished spans wait to be sent; when full, the oldest is dropped for the newest. */
  readonly maxQueueSize: number
  /** The most spans one request carries. */
  readonly maxBatchSize: number
  /** How long the first span of a batch waits for others to join it. */
  readonly scheduleDelay: Duration.Duration
}

/** The defaults: the specification's, except a one-second batch delay (its 5 s) so traces show up promptly. */
export const defaults = {
  timeout: Duration.seconds(10),
  maxQueueSize: 2048,
  maxBatchSize: 512,
  scheduleDelay: Duration.seconds(1),
  serviceName: "foundry"
} as const

/** A variable's value, `None` when it is unset or empty. */
const variable = (name: string) =>
  Config.option(Config.string(name)).pipe(Effect.orDie, Effect.map(Option.filter((value) => value.trim() !== "")))

/** The first of `names` that is set. */
const firstOf = (...names: ReadonlyArray<string>) =>
  Effect.map(Effect.all(names.map((name) => Effect.map(variable(name), Option.map((value) => ({ name, value }))))), Option.firstSomeOf)

/** A whole number of milliseconds or a count, at least `least`; anything else is warned about and `fallback` used. */
const wholeNumber = (names: ReadonlyArray<string>, what: string, fallback: number, least = 1) =>
  Effect.flatMap(firstOf(...names), Option.match({
    onNone: () => Effect.succeed(fallback),
    onSome: ({ name, value }) => {
      const parsed = Number(value.trim())
      return Number.isInteger(parsed) && parsed >= least
        ? Effect.succeed(parsed)
        : Effect.as(Effect.logWarning(`${name}=${value} is not ${what} (a whole number, at least ${least}): using ${fallback}`), fallback)
    }
  }))

/**
 * A `key1=value1,key2=value2` list (the W3C baggage form the specification uses for headers and
 * resource attributes), values percent-decoded. An entry that is not `key=value` is warned about
 * by its position (a header may carry a secret) and left out.
 */
const keyValueList = (name: string, text: string) =>
  Effect.gen(function*() {
    const entries: Record<string, string> = {}
    const entryTexts = text.split(",")
    for (const [index, entry] of entryTexts.entries()) {
      if (entry.trim() === "") continue
      const equals = entry.indexOf("=")
      const key = equals > 0 ? entry.slice(0, equals).trim() : ""
      const value = decoded(entry.slice(equals + 1).trim())
      if (key === "" || value === undefined) {
        yield* Effect.logWarning(
          `${name}: entry ${index + 1} of ${entryTexts.length} is not key=value (values percent-encoded, entries separated by commas): it is left out`
        )
        continue
      }
      entries[key] = value
    }
    return entries
  })

const decoded = (value: string): string | undefined => {
  try {
    return decodeURIComponent(value)
  } catch {
    return undefined
  }
}

/** The headers of `name` (read as a secret), keys lower-cased so that a traces-only header replaces a general one. */
const headersOf = (name: string) =>
  Effect.gen(function*() {
    const text = yield* Config.option(Config.redacted(name)).pipe(Effect.orDie)
    if (Option.isNone(text)) return {}
    const entries = yield* keyValueList(name, Redacted.value(text.value))
    return Object.fromEntries(Object.entries(entries).map(([key, value]) => [key.toLowerCase(), value]))
  })

/**
 * The traces endpoint: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, or
 * `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces` appended, as the specification says.
 */
const endpointOf = Effect.gen(function*() {
  const traces = yield* variable("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
  if (Option.isSome(traces)) return Option.some(traces.value.trim())
  return Option.map(yield* variable("OTEL_EXPORTER_OTLP_ENDPOINT"), (base) => `${base.trim().replace(/\/+$/, "")}/v1/traces`)
})

/** Foundry sends OTLP/HTTP JSON only; a protocol asked for that is not it would otherwise fail in silence. */
const warnOfProtocol = Effect.flatMap(firstOf("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"), Option.match({
  onNone: () => Effect.void,
  onSome: ({ name, value }) =>
    value.trim() === "http/json"
      ? Effect.void
      : Effect.logWarning(`${name}=${value}: Foundry sends traces as OTLP/HTTP JSON only (http/json), to an OTLP/HTTP port (4318), not gRPC`)
}))

/** The compression asked for, the traces variable first; a value the specification does not name is warned about, and none used. */
const compressionOf: Effect.Effect<OtlpCompression> = Effect.flatMap(
  firstOf("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"),
  Option.match({
    onNone: () => Effect.succeed<OtlpCompression>("none"),
    onSome: ({ name, value }) => {
      const asked = value.trim().toLowerCase()
      return asked === "gzip" || asked === "none"
        ? Effect.succeed<OtlpCompression>(asked)
        : Effect.as(Effect.logWarning(`${name}=${value} is not a compression the exporter knows (gzip or none): sending uncompressed`), "none")
    }
  })
)

/**
 * Whether `OTEL_SDK_DISABLED` turns the export off: "true" (any case) does, as the specification
 * says, whatever endpoint is set; "false" or unset does not; anything else is warned about and read
 * as false, the specification's default.
 */
const disabled = Effect.flatMap(variable("OTEL_SDK_DISABLED"), Option.match({
  onNone: () => Effect.succeed(false),
  onSome: (value) => {
    const asked = value.trim().toLowerCase()
    if (asked === "true") return Effect.succeed(true)
    if (asked === "false") return Effect.succeed(false)
    return Effect.as(Effect.logWarning(`OTEL_SDK_DISABLED=${value} is neither true nor false: read as false, spans are exported`), false)
  }
}))

/**
 * The settings from the environment, warning about values that cannot be read; `None` when no
 * endpoint is set or `OTEL_SDK_DISABLED` is true.
 */
export const read: Effect.Effect<Option.Option<OtlpSettings>> = Effect.gen(function*() {
  const endpoint = yield* endpointOf
  if (Option.isNone(endpoint)) return Option.none()
  if (yield* disabled) {
    yield* Effect.logInfo(`OTEL_SDK_DISABLED=true: no spans are exported (to ${endpoint.value})`)
    return Option.none()
  }
  yield* warnOfProtocol
  const compression = yield* compressionOf
  const headers = { ...yield* headersOf("OTEL_EXPORTER_OTLP_HEADERS"), ...yield* headersOf("OTEL_EXPORTER_OTLP_TRACES_HEADERS") }
  const timeout = yield* wholeNumber(
    ["OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"], "a timeout in milliseconds", Duration.toMillis(defaults.timeout)
  )
  const attributes = yield* Effect.flatMap(variable("OTEL_RESOURCE_ATTRIBUTES"), Option.match({
    onNone: () => Effect.succeed<Record<string, string>>({}),
    onSome: (text) => keyValueList("OTEL_RESOURCE_ATTRIBUTES", text)
  }))
  const serviceName = Option.getOrElse(
    Option.map(yield* variable("OTEL_SERVICE_NAME"), (name) => name.trim()),
    () => attributes["service.name"] ?? defaults.serviceName
  )
  const maxQueueSize = yield* wholeNumber(["OTEL_BSP_MAX_QUEUE_SIZE"], "a number of spans", defaults.maxQueueSize)
  const maxBatchSize = yield* wholeNumber(["OTEL_BSP_MAX_EXPORT_BATCH_SIZE"], "a number of spans", defaults.maxBatchSize)
  const scheduleDelay = yield* wholeNumber(["OTEL_BSP_SCHEDULE_DELAY"], "a delay in milliseconds", Duration.toMillis(defaults.scheduleDelay), 0)
  return Option.some({
    endpoint: endpoint.value,
    headers,
    compression,
    timeout: Duration.millis(timeout),
    resource: { ...attributes, "service.name": serviceName },
    maxQueueSize,
    // The specification's rule: a batch is never larger than the queue.
    maxBatchSize: Math.min(maxBatchSize, maxQueueSize),
    scheduleDelay: Duration.millis(scheduleDelay)
  })
})
