/**
 * Server-sent events on the wire: one frame per event, its `seq` as the id a client resumes from,
 * and a run's followed events as a response.
 */
import { HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Duration, Effect, FiberRef, Option, type Scope } from "effect"
import { currentAccessEnds } from "../../../auth/TokenRevocations.js"
import type { RunFollower } from "../../../events/EventLog.js"
import type { FoundryEvent } from "../../../events/FoundryEvent.js"
import { prefersOverJson } from "../acceptWeights.js"
import { BadRequest } from "../api/BadRequest.js"
import { nodeResponseOf } from "../nodeResponse.js"
import { ServerStopping } from "../ServerStopping.js"

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

/**
 * The `seq` a client resumes after, from its `Last-Event-ID` (which `EventSource` sends on every
 * reconnection); one that is no seq is said, not ignored: a stream from the start, or from now,
 * would silently repeat or skip what the client missed.
 */
export const lastEventId = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<number | undefined, BadRequest> => {
  const header = request.headers["last-event-id"]
  if (header === undefined) return Effect.succeed(undefined)
  const seq = Number(header)
  if (Number.isInteger(seq) && seq >= 0) return Effect.succeed(seq)
  const issue = { path: "Last-Event-ID", message: `expected the seq of an event (a whole number, 0 or more), got ${JSON.stringify(header)}` }
  return Effect.fail(new BadRequest({ message: `${issue.path}: ${issue.message}`, issues: [issue] }))
}

/**
 * Whether the request asks to be answered with server-sent events: its `Accept` weighs
 * `text/event-stream` above 0, and no less than JSON (see `prefersOverJson`).
 */
export const wantsEventStream = (request: HttpServerRequest.HttpServerRequest): boolean => prefersOverJson(request.headers.accept, "text/event-stream")

/** A comment frame that keeps an idle stream alive. */
export const heartbeatFrame: Uint8Array = encoder.encode(": heartbeat\n\n")

/** The answer's status and headers: the frames follow in its body. */
const streamHead = HttpServerResponse.empty({ status: 200, headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } })

/**
 * An SSE response of a run's followed events, opened in the request's scope (so that a store that
 * cannot read them fails the request before it is answered, and whatever `open` opened closes with
 * the request). Each delivery is written as its frames straight into Node's response, and the next
 * is asked for only while the socket takes them; the answer's head is the one the platform would
 * have written, the edge's headers (security, CORS) included. No Effect `Stream`, no fiber and no
 * stream pipeline per response: every client that follows a run pays this for each of the run's
 * steps (docs/performance.md). The request's fiber waits until the run's end has been written, or
 * until the client goes away (the platform interrupts it then), the server stops, or the token the
 * request was admitted on is revoked. A stream with nothing to say for `heartbeat` gets a comment.
 * `headers` go in the answer's head beside its own.
 */
export const sseResponse = <E>(
  open: Effect.Effect<RunFollower, E, Scope.Scope>,
  heartbeat: Duration.DurationInput,
  headers?: Readonly<Record<string, string>>
) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const next = yield* open
    const ownHead = headers === undefined ? streamHead : HttpServerResponse.setHeaders(streamHead, headers)
    // A HEAD request is answered by the platform, headers only.
    if (request.method === "HEAD") return ownHead
    // The head the platform would write: with the headers the edge adds to every answer (they only
    // add headers: a failure there is a defect).
    const preResponse = yield* FiberRef.get(HttpApp.currentPreResponseHandlers)
    const head = Option.isSome(preResponse) ? yield* Effect.orDie(preResponse.value(request, ownHead)) : ownHead
    const response = yield* nodeResponseOf(request)
    const stopping = yield* ServerStopping
    const accessEnds = yield* FiberRef.get(currentAccessEnds)
    yield* Effect.async<void>((resume) => {
      response.writeHead(head.status, head.headers)
      // A comment once nothing was written for a heartbeat's time (a run that waits for a person, a
      // long tool call), so that proxies keep the stream open: looked at four times a heartbeat, so
      // that no silence lasts more than a quarter longer.
      const every = Duration.toMillis(Duration.decode(heartbeat))
      let writtenAt = Date.now()
      const beats = setInterval(() => {
        if (Date.now() - writtenAt < every) return
        response.write(heartbeatFrame)
        writtenAt = Date.now()
      }, every / 4)
      let takeBack = () => {}
      let unlessStopped = () => {}
      let unlessRevoked = () => {}
      let ended = false
      // A delivery made while asking (stored events) asks again once the asking is done.
      let asking = false
      let again = false
      const ask = (): void => {
        if (ended) return
        asking = true
        do {
          again = false
          takeBack = next(deliver)
        } while (again)
        asking = false
      }
      // Nothing more is written: the response ends, fails, or its client went.
      const finish = () => {
        ended = true
        clearInterval(beats)
        unlessStopped()
        unlessRevoked()
      }
      // The run's end, or the server's (the client reconnects then, to the next server).
      const end = () => {
        finish()
        response.end()
        resume(Effect.void)
      }
      const deliver = (events: ReadonlyArray<FoundryEvent> | undefined): void => {
        // Called inside the publication of the run's events: a failure here is this response's alone.
        if (ended) return
        try {
          if (events === undefined) return end()
          if (events.length > 0) writtenAt = Date.now()
          if (events.length > 0 && !response.write(sseFrames(events))) response.once("drain", ask)
          else if (asking) again = true
          else ask()
        } catch (error) {
          finish()
          takeBack()
          response.destroy()
          resume(Effect.logError("a run's event stream failed", error))
        }
      }
      // Ended early when the server stops, or when the token the request was admitted on is revoked.
      const cut = () => {
        takeBack()
        end()
      }
      unlessStopped = stopping.onStop(cut)
      unlessRevoked = accessEnds(cut)
      ask()
      return Effect.sync(() => {
        finish()
        response.off("drain", ask)
        takeBack()
      })
    })
    return head
  })
