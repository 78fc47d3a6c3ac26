/**
 * One batch of spans posted to an OTLP/HTTP endpoint: each request bounded by the exporter's
 * timeout, its body gzip-compressed when the settings ask, and the answers the specification calls
 * retryable (429, 502, 503, 504, or no connection) tried again with backoff, honouring a
 * `Retry-After` in seconds or as an HTTP date. A 200 may still say some spans were rejected
 * (its partial success), which is returned.
 */
import { promisify } from "node:util"
import { gzip } from "node:zlib"
import { Clock, Data, Duration, Effect, type Option } from "effect"
import { type PartialSuccess, partialSuccessOf } from "./otlpPartialSuccess.js"
import type { OtlpSettings } from "./OtlpSettings.js"

/** The endpoint did not answer within the timeout. */
export class OtlpTimeout extends Data.TaggedError("OtlpTimeout")<{ readonly timeout: Duration.Duration }> {}

/** No HTTP answer at all: refused, reset, not resolved. */
export class OtlpUnreachable extends Data.TaggedError("OtlpUnreachable")<{ readonly reason: string }> {}

/** An answer that is not 2xx. */
export class OtlpRejected extends Data.TaggedError("OtlpRejected")<{
  readonly status: number
  readonly body: string
  readonly retryAfter: Duration.Duration | undefined
}> {}

/** Why a batch was not accepted. */
export type OtlpFailure = OtlpTimeout | OtlpUnreachable | OtlpRejected

const retryableStatuses: ReadonlySet<number> = new Set([429, 502, 503, 504])

/** Tries after the first, and the wait before the first of them (doubled each time, with jitter). */
const retries = 3
const firstBackoff = Duration.millis(500)
/** A server's Retry-After beyond this is not waited for: spans would pile up behind one batch. */
const longestWait = Duration.seconds(30)

/** Node's fetch fails with "fetch failed"; what went wrong (ECONNREFUSED ...) is its cause. */
const reasonOf = (error: unknown): string =>
  error instanceof Error && error.cause instanceof Error ? error.cause.message : error instanceof Error ? error.message : String(error)

/**
 * A `Retry-After` (RFC 9110): a number of seconds, or an HTTP date, the wait being until then
 * (none when it has passed); `undefined` when it is neither.
 */
const retryAfterOf = (header: string | null, now: number): Duration.Duration | undefined => {
  if (header === null || header.trim() === "") return undefined
  const seconds = Number(header.trim())
  if (Number.isFinite(seconds)) return seconds >= 0 ? Duration.seconds(seconds) : undefined
  const until = Date.parse(header.trim())
  return Number.isNaN(until) ? undefined : Duration.millis(Math.max(0, until - now))
}

const compress = promisify(gzip)

const attempt = (settings: OtlpSettings, body: string | Uint8Array): Effect.Effect<Option.Option<PartialSuccess>, OtlpFailure> =>
  Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(settings.endpoint, {
        method: "POST",
        headers: {
          ...settings.headers,
          "content-type": "application/json",
          ...(settings.compression === "gzip" ? { "content-encoding": "gzip" } : {})
        },
        body,
        signal
      })
      // Read to the end, so that the connection is free for the next request.
      return { status: response.status, body: await response.text(), retryAfter: response.headers.get("retry-after") }
    },
    catch: (error) => new OtlpUnreachable({ reason: reasonOf(error) })
  }).pipe(
    Effect.timeoutFail({ duration: settings.timeout, onTimeout: () => new OtlpTimeout({ timeout: settings.timeout }) }),
    Effect.flatMap((answer) =>
      answer.status >= 200 && answer.status < 300
        ? Effect.succeed(partialSuccessOf(answer.body))
        : Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.fail(new OtlpRejected({ status: answer.status, body: answer.body, retryAfter: retryAfterOf(answer.retryAfter, now) })))
    )
  )

/** Whether the specification says to send again: a timeout is not, or a collector that hangs would hold every batch four times as long. */
const isRetryable = (failure: OtlpFailure): boolean =>
  failure._tag === "OtlpUnreachable" || (failure._tag === "OtlpRejected" && retryableStatuses.has(failure.status))

const waitBefore = (failure: OtlpFailure, backoff: Duration.Duration): Duration.Duration => {
  const jittered = Duration.times(backoff, 0.8 + Math.random() * 0.4)
  const asked = failure._tag === "OtlpRejected" ? failure.retryAfter : undefined
  return Duration.min(asked === undefined ? jittered : Duration.max(asked, jittered), longestWait)
}

/**
 * Posts `body` (an OTLP JSON `ExportTraceServiceRequest`), trying a retryable failure again up to
 * three times; what the collector did not take of it when it took it in part.
 */
export const postSpans = (settings: OtlpSettings, body: string): Effect.Effect<Option.Option<PartialSuccess>, OtlpFailure> => {
  const tryFrom = (payload: string | Uint8Array, left: number, backoff: Duration.Duration): Effect.Effect<Option.Option<PartialSuccess>, OtlpFailure> =>
    attempt(settings, payload).pipe(Effect.catchIf(
      (failure) => left > 0 && isRetryable(failure),
      (failure) => Effect.zipRight(Effect.sleep(waitBefore(failure, backoff)), tryFrom(payload, left - 1, Duration.times(backoff, 2)))
    ))
  // Compressed once, off the event loop (zlib's thread pool), for every try.
  const payload: Effect.Effect<string | Uint8Array> = settings.compression === "gzip" ? Effect.promise(() => compress(body)) : Effect.succeed(body)
  return Effect.flatMap(payload, (sent) => tryFrom(sent, retries, firstBackoff))
}
