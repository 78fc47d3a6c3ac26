/**
 * Server-sent events on the wire: one frame per event, its `seq` as the id a client resumes from,
 * and a run's followed events as a response.
 */
import { Readable } from "node:stream"
import { HttpServerResponse } from "@effect/platform"
import { Effect, Exit, Option, Runtime, Scope } from "effect"
import type { RunFollower } from "../../../events/EventLog.js"
import type { FoundryEvent } from "../../../events/FoundryEvent.js"

const encoder = new TextEncoder()

const frameText = (event: FoundryEvent): string =>
  `${event.seq > 0 ? `id: ${event.seq}\n` : ""}event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`

/** One event as an SSE frame; ephemeral events (seq 0) carry no id. */
export const sseFrame = (event: FoundryEvent): Uint8Array => encoder.encode(frameText(event))

/**
 * Events delivered together as their frames in one chunk: one write to the socket, one HTTP
 * chunk, instead of one of each per event (a run's answer arrives as several events at once).
 */
const sseFrames = (events: ReadonlyArray<FoundryEvent>): Uint8Array => encoder.encode(events.map(frameText).join(""))

/** A comment frame that keeps an idle stream alive. */
export const heartbeatFrame: Uint8Array = encoder.encode(": heartbeat\n\n")

/**
 * An SSE response of a run's followed events (opened now, in a scope of its own, so that a store
 * that cannot read them fails the request before it is answered): each delivery is written as its
 * frames straight into the response's Node stream, from the body's first read on, and the next is
 * asked for only while the client keeps up. No fiber and no Effect `Stream`: every client that
 * follows a run pays this for each of the run's steps (docs/performance.md).
 *
 * The body's end closes what `open` opened: after its last frame, when a client goes away, and
 * when the request's scope closes without the body ever being written (a `HEAD` request, a client
 * gone before the answer).
 */
export const sseResponse = <E>(open: Effect.Effect<RunFollower, E, Scope.Scope>) =>
  Effect.uninterruptibleMask((restore) => Effect.gen(function*() {
    const scope = yield* Scope.make()
    const next = yield* restore(Scope.extend(open, scope)).pipe(Effect.onError(() => Scope.close(scope, Exit.void)))
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const close = () => runFork(Scope.close(scope, Exit.void))
    // The client reads (its buffer is not full); a delivery is asked for; the last one came.
    let reading = false
    let asked = false
    let ended = false
    const forward = (events: ReadonlyArray<FoundryEvent> | undefined): void => {
      if (events === undefined) {
        ended = true
        body.push(null)
        // Followed no longer: the run's live events need not be kept for it while the client lingers.
        close()
        return
      }
      // Pushing may read again at once: `asked` holds until the delivery's frames are in.
      if (events.length > 0 && !body.push(sseFrames(events))) reading = false
      asked = false
      ask()
    }
    const ask = (): void => {
      if (!reading || asked || ended) return
      asked = true
      next((events) => {
        // Called inside the publication of the run's events: a failure here is this stream's alone.
        try {
          forward(events)
        } catch (error) {
          ended = true
          runFork(Effect.logError("a run's event stream failed", error))
          body.destroy()
        }
      })
    }
    const body = new Readable({
      read: () => {
        reading = true
        ask()
      }
    })
    body.once("close", close)
    // The platform closes the request's scope once the response is written, or once it is not.
    const request = yield* Effect.serviceOption(Scope.Scope)
    if (Option.isSome(request)) yield* Scope.addFinalizer(request.value, Effect.sync(() => body.destroy()))
    return HttpServerResponse.raw(body, { contentType: "text/event-stream", headers: { "cache-control": "no-cache" } })
  }))
