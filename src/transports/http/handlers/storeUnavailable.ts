/**
 * Store failures at the API's edge, handled one way for every handler: the client gets
 * `StoreUnavailable` (503), the server's log gets the `StoreError` with the operation that failed.
 */
import { Effect, Stream } from "effect"
import { StoreError } from "../../../durable/StoreError.js"
import { StoreUnavailable } from "../api/StoreUnavailable.js"

// The same words for every endpoint: whatever the store said stays in the log.
const unavailable = new StoreUnavailable({
  message: "the store could not be reached or used; nothing is wrong with the request, which can be retried " +
    "(POST /api/runs with the same idempotency-key header starts at most one run)"
})

/** Logs a store failure with its operation (its message can hold SQL: for the operator only). */
export const logStoreError = (error: StoreError): Effect.Effect<void> =>
  Effect.logError(`the store failed: ${error.message}`).pipe(
    Effect.annotateLogs({ storeOperation: error.operation })
  )

/** A handler whose `StoreError` is logged and answered as `StoreUnavailable`; its other errors stay. */
export const orStoreUnavailable = <A, E, R>(
  handler: Effect.Effect<A, E | StoreError, R>
): Effect.Effect<A, Exclude<E, StoreError> | StoreUnavailable, R> =>
  Effect.catchIf(
    handler,
    (error): error is StoreError => error instanceof StoreError,
    (error) => Effect.zipRight(logStoreError(error), Effect.fail(unavailable))
  )

/**
 * A response stream whose `StoreError` is logged and then cuts the connection: its status line is
 * already sent, so no 503 can follow, and ending normally would tell the client the stream is
 * complete; an SSE client reconnects with `Last-Event-ID` instead.
 */
export const cutOnStoreError = <A, R>(stream: Stream.Stream<A, StoreError, R>): Stream.Stream<A, never, R> =>
  stream.pipe(Stream.tapError(logStoreError), Stream.orDie)
