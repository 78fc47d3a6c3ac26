/**
 * One batch of spans posted to an OTLP/HTTP endpoint: each request bounded by the exporter's
 * timeout, and the answers the specification calls retryable (429, 502, 503, 504, or no
 * connection) tried again with backoff, honouring a `Retry-After` in seconds.
 */
import { Data, Duration, Effect } from "effect"
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

/** A `Retry-After` in seconds (the HTTP-date form is rare from collectors and is ignored). */
const retryAfterOf = (header: string | null): Duration.Duration | undefined => {
  const seconds = header === null ? Number.NaN : Number(header.trim())
  return Number.isFinite(seconds) && seconds >= 0 ? Duration.seconds(seconds) : undefined
}

const attempt = (settings: OtlpSettings, body: string): Effect.Effect<void, OtlpFailure> =>
  Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(settings.endpoint, {
        method: "POST",
        headers: { ...settings.headers, "content-type": "application/json" },
        body,
        signal
      })
      // Read to the end, so that the connection is free for the next request.
      return { status: response.status, body: await response.text(), retryAfter: retryAfterOf(response.headers.get("retry-after")) }
    },
    catch: (error) => new OtlpUnreachable({ reason: reasonOf(error) })
  }).pipe(
    Effect.timeoutFail({ duration: settings.timeout, onTimeout: () => new OtlpTimeout({ timeout: settings.timeout }) }),
    Effect.flatMap((answer) => answer.status >= 200 && answer.status < 300 ? Effect.void : Effect.fail(new OtlpRejected(answer)))
  )

/** Whether the specification says to send again: a timeout is not, or a collector that hangs would hold every batch four times as long. */
const isRetryable = (failure: OtlpFailure): boolean =>
  failure._tag === "OtlpUnreachable" || (failure._tag === "OtlpRejected" && retryableStatuses.has(failure.status))

const waitBefore = (failure: OtlpFailure, backoff: Duration.Duration): Duration.Duration => {
  const jittered = Duration.times(backoff, 0.8 + Math.random() * 0.4)
  const asked = failure._tag === "OtlpRejected" ? failure.retryAfter : undefined
  return Duration.min(asked === undefined ? jittered : Duration.max(asked, jittered), longestWait)
}

/** Posts `body` (an OTLP JSON `ExportTraceServiceRequest`), trying a retryable failure again up to three times. */
export const postSpans = (settings: OtlpSettings, body: string): Effect.Effect<void, OtlpFailure> => {
  const tryFrom = (left: number, backoff: Duration.Duration): Effect.Effect<void, OtlpFailure> =>
    attempt(settings, body).pipe(Effect.catchIf(
      (failure) => left > 0 && isRetryable(failure),
      (failure) => Effect.zipRight(Effect.sleep(waitBefore(failure, backoff)), tryFrom(left - 1, Duration.times(backoff, 2)))
    ))
  return tryFrom(retries, firstBackoff)
}
