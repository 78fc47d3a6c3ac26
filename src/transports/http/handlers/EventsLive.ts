/**
 * The events group's handler: a page of events as JSON (oldest first, or the newest first with
 * `order=newest`), or with `Accept: text/event-stream` the same filter followed live, resuming
 * after `Last-Event-ID` (or `after`; with neither, from now), with a heartbeat.
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Clock, Effect, Schedule, Stream } from "effect"
import { CurrentApp } from "../../../compiler/CurrentApp.js"
import { EventStorage } from "../../../events/EventStorage.js"
import { EventLog } from "../../../events/EventLog.js"
import { FoundryApi } from "../api/FoundryApi.js"
import { ServerStopping } from "../ServerStopping.js"
import { heartbeatFrame, lastEventId, sseFrame, wantsEventStream } from "./sse.js"
import { cutOnStoreError, orStoreUnavailable } from "./storeUnavailable.js"

/** Handlers for `/api/events`. */
export const EventsLive = HttpApiBuilder.group(FoundryApi, "events", (handlers) =>
  Effect.gen(function*() {
    const storage = yield* EventStorage
    const events = yield* EventLog
    const current = yield* CurrentApp
    const stopping = yield* ServerStopping
    return handlers.handleRaw("list", ({ urlParams }) =>
      Effect.gen(function*() {
        const { after, before, limit, order, ...filter } = urlParams
        const request = yield* HttpServerRequest.HttpServerRequest
        if (wantsEventStream(request)) {
          const cursor = (yield* lastEventId(request)) ?? after
          // A cursor past this store's newest event was another store's (a fresh dev database,
          // another project's server on the port): every event here comes after it, where resuming
          // as given would bring nothing until this store passed the old numbers.
          const newest = cursor === undefined || cursor === 0 ? 0 : yield* storage.newestSeq.pipe(orStoreUnavailable)
          const resume = cursor !== undefined && newest < cursor ? 0 : cursor
          // Without a cursor the stream is live: it starts with what happens from now on.
          const now = yield* Clock.currentTimeMillis
          const live = (resume === undefined ? events.follow({ ...filter, since: filter.since ?? now }, 0) : events.follow(filter, resume))
            .pipe(cutOnStoreError, Stream.map(sseFrame))
          const heartbeat = (yield* current.get).table.config.server.sseHeartbeat
          const beats = Stream.fromSchedule(Schedule.spaced(heartbeat)).pipe(Stream.map(() => heartbeatFrame))
          // A first comment at once, so the client sees the stream open before any event.
          // Ended when the server stops: the client reconnects, to the next one.
          const stream = Stream.concat(Stream.make(heartbeatFrame), Stream.merge(live, beats, { haltStrategy: "left" })).pipe(
            Stream.interruptWhen(stopping.stopped)
          )
          return HttpServerResponse.stream(stream, {
            contentType: "text/event-stream",
            headers: { "cache-control": "no-cache" }
          })
        }
        const newestFirst = order === "newest"
        const page = yield* storage.list({ ...filter, after, before, newestFirst, limit: limit ?? 100 }).pipe(orStoreUnavailable)
        const last = page[page.length - 1]
        const body = last === undefined || page.length < (limit ?? 100)
          ? { events: page }
          : newestFirst ? { events: page, nextBefore: last.seq } : { events: page, nextAfter: last.seq }
        return yield* HttpServerResponse.json(body).pipe(Effect.orDie)
      }))
  }))
