/**
 * What the log says about the OTLP export: a warning naming the endpoint and what went wrong the
 * first time each kind of failure happens (a status, a timeout, no connection), and the first
 * time the queue overflows; then nothing more until a batch is accepted again, when one line says
 * export works again and how many spans were lost meanwhile. A collector that is down for an hour
 * costs a few lines, not one per batch. A 200 whose partial success rejected spans, or carries a
 * warning, is reported the same way: once per kind, naming the count and the collector's message.
 */
import { Duration, Effect } from "effect"
import type { PartialSuccess } from "./otlpPartialSuccess.js"
import type { OtlpFailure } from "./otlpRequest.js"

/** The log's side of an exporter. */
export interface OtlpReport {
  /** A batch of `spans` spans was given up after `failure`. */
  readonly failed: (failure: OtlpFailure, spans: number) => Effect.Effect<void>
  /** A batch of `spans` spans was taken in part (or whole, with a warning), as `partial` says. */
  readonly partial: (partial: PartialSuccess, spans: number) => Effect.Effect<void>
  /** A batch was accepted. */
  readonly accepted: Effect.Effect<void>
  /** The full queue dropped its oldest span (`capacity` is its size). */
  readonly dropped: (capacity: number) => Effect.Effect<void>
  /** At shutdown: `unsent` spans were still queued or being sent when time ran out. */
  readonly shutDown: (unsent: number, timeout: Duration.Duration) => Effect.Effect<void>
}

const kindOf = (failure: OtlpFailure): string => failure._tag === "OtlpRejected" ? `HTTP ${failure.status}` : failure._tag

const describe = (failure: OtlpFailure): string => {
  switch (failure._tag) {
    case "OtlpTimeout":
      return `no answer within ${Duration.format(failure.timeout)} (OTEL_EXPORTER_OTLP_TIMEOUT)`
    case "OtlpUnreachable":
      return `no connection: ${failure.reason}`
    case "OtlpRejected": {
      const body = failure.body.trim().replace(/\s+/g, " ")
      return `HTTP ${failure.status}${body === "" ? "" : `: ${body.length > 200 ? `${body.slice(0, 200)}...` : body}`}`
    }
  }
}

/** The report for exports to `endpoint`. */
export const make = (endpoint: string): OtlpReport => {
  const warned = new Set<string>()
  let lost = 0
  let overflowing = false
  return {
    failed: (failure, spans) =>
      Effect.suspend(() => {
        lost += spans
        const kind = kindOf(failure)
        if (warned.has(kind)) return Effect.void
        warned.add(kind)
        return Effect.logWarning(
          `OpenTelemetry export to ${endpoint} failed: ${describe(failure)}; ${spans} spans are lost. ` +
            "Further failures like this are not logged until an export succeeds."
        )
      }),
    partial: ({ errorMessage, rejectedSpans }, spans) =>
      Effect.suspend(() => {
        lost += rejectedSpans
        const kind = rejectedSpans > 0 ? "partial success: rejected spans" : "partial success: warning"
        if (warned.has(kind)) return Effect.void
        warned.add(kind)
        const said = errorMessage === "" ? "it gave no reason" : errorMessage
        return Effect.logWarning(
          rejectedSpans > 0
            ? `OpenTelemetry export to ${endpoint}: the collector took the request but rejected ${rejectedSpans} of its ${spans} spans (partial success): ${said}; they are lost. ` +
              "Further rejections like this are not logged until an export is taken whole."
            : `OpenTelemetry export to ${endpoint}: the collector took all ${spans} spans with a warning (partial success): ${said}. ` +
              "Further warnings like this are not logged until an export is taken whole."
        )
      }),
    accepted: Effect.suspend(() => {
      if (warned.size === 0 && !overflowing) return Effect.void
      const message = `OpenTelemetry export to ${endpoint} works again; ${lost} spans were lost meanwhile.`
      warned.clear()
      overflowing = false
      lost = 0
      return Effect.logInfo(message)
    }),
    dropped: (capacity) =>
      Effect.suspend(() => {
        lost += 1
        if (overflowing) return Effect.void
        overflowing = true
        return Effect.logWarning(
          `OpenTelemetry export to ${endpoint} falls behind: ${capacity} spans wait to be sent, so the oldest are dropped ` +
            "(OTEL_BSP_MAX_QUEUE_SIZE sets how many may wait)."
        )
      }),
    shutDown: (unsent, timeout) =>
      unsent === 0
        ? Effect.void
        : Effect.logWarning(
          `OpenTelemetry export to ${endpoint}: ${unsent} spans were not sent at shutdown, the endpoint did not take them within ${
            Duration.format(timeout)
          } (OTEL_EXPORTER_OTLP_TIMEOUT).`
        )
  }
}
