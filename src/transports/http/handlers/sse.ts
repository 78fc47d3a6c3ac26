/**
 * Server-sent events on the wire: one frame per event, its `seq` as the id a client resumes from,
 * and a run's followed events as a response.
 */
import { Readable } from "node:stream"
import { HttpServerResponse } from "@effect/platform"
import { Cause, Effect, Exit, FiberId, Option, Scope } from "effect"
import type { StoreError } from "../../../durable/StoreError.js"
import type { EventPull } from "../../../events/EventLog.js"
import type { FoundryEvent } from "../../../events/FoundryEvent.js"

const encoder = new TextEncoder()

/** One event as an SSE frame; ephemeral events (seq 0) carry no id. */
export const sseFrame = (event: FoundryEvent): Uint8Array =>
  encoder.encode(`${event.seq > 0 ? `id: ${event.seq}\n` : ""}event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`)

/** A comment frame that keeps an idle stream alive. */
export const heartbeatFrame: Uint8Array = encoder.encode(": heartbeat\n\n")

/**
 * An SSE response of the events `open` pulls (opened now, in a scope of its own, so that a store
 * that cannot read them fails the request before it is answered): each chunk of events is written
 * as its frames straight into the response's Node stream, from the body's first read on, waiting
 * while the client does not keep up. Not an Effect `Stream`: through the server's writer a
 * `Stream` costs about a hundred fiber operations per chunk, and every client that follows a run
 * pays it for each of the run's steps (docs/performance.md).
 *
 * The body's end closes what `open` opened: after its last frame, when a client goes away, and
 * when the request's scope closes without the body ever being written (a `HEAD` request, a client
 * gone before the answer).
 */
export const sseResponse = (open: Effect.Effect<EventPull, StoreError, Scope.Scope>) =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const pull = yield* restore(Scope.extend(open, scope)).pipe(Effect.onError(() => Scope.close(scope, Exit.void)))
      // Open while the client reads: closed until the body is first read, and whenever its buffer is full.
      const reading = yield* Effect.makeLatch(false)
      const body = new Readable({ read: () => reading.unsafeOpen() })
      const pump = Effect.gen(function*() {
        while (true) {
          yield* reading.await
          const chunk = yield* Effect.option(pull)
          if (Option.isNone(chunk)) return body.push(null)
          let more = true
          for (const event of chunk.value) more = body.push(sseFrame(event))
          if (!more) reading.unsafeClose()
        }
      }).pipe(
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.void
            : Effect.zipRight(Effect.logError("a run's event stream failed", cause), Effect.sync(() => body.destroy()))),
        Effect.ensuring(Scope.close(scope, Exit.void))
      )
      const fiber = yield* Effect.forkDaemon(Effect.interruptible(pump))
      body.once("close", () => fiber.unsafeInterruptAsFork(FiberId.none))
      // The platform closes the request's scope once the response is written, or once it is not.
      const request = yield* Effect.serviceOption(Scope.Scope)
      if (Option.isSome(request)) yield* Scope.addFinalizer(request.value, Effect.sync(() => body.destroy()))
      return HttpServerResponse.raw(body, { contentType: "text/event-stream", headers: { "cache-control": "no-cache" } })
    })
  )
