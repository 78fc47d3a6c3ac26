/**
 * `/api/events`: the event log, filtered, paged by a `seq` cursor, or followed live over SSE.
 */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { EventType, FoundryEvent } from "../../../events/FoundryEvent.js"

/**
 * A page of events, each with its type's payload; `nextAfter` is the cursor for the next page
 * (absent at the end), or with `order=newest` `nextBefore` for the page of older events.
 */
export const EventPage = Schema.Struct({
  events: Schema.Array(FoundryEvent),
  nextAfter: Schema.optional(Schema.Number),
  nextBefore: Schema.optional(Schema.Number)
})

const Cursor = Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative())

/** The events group. */
export class EventsGroup extends HttpApiGroup.make("events").add(
  HttpApiEndpoint.get("list", "/api/events")
    .setUrlParams(Schema.Struct({
      runId: Schema.optional(Schema.String.annotations({
        description: "a run's events; empty (runId=) for the events of no run: webhook deliveries' own, instances' changes"
      })),
      conversationId: Schema.optional(Schema.String.annotations({
        description: "a conversation's events; empty (conversationId=) for the events of no conversation"
      })),
      instanceId: Schema.optional(Schema.String),
      agent: Schema.optional(Schema.String),
      // One of the event types: a misspelt type is a 400 naming them, not an empty page.
      type: Schema.optional(EventType),
      since: Schema.optional(Cursor),
      /**
       * Events after this `seq` (a page's `nextAfter`). A live stream resumes after it, or after
       * `Last-Event-ID`; one past the store's newest event was another store's (it started over),
       * and the stream starts from this store's first.
       */
      after: Schema.optional(Cursor.annotations({
        description: "events after this seq; a live stream resumes after it or after Last-Event-ID, and from the store's first event when it is past the store's newest (the store started over)"
      })),
      /** Events before this `seq` (a page's `nextBefore`). */
      before: Schema.optional(Cursor),
      /** `oldest` first (the default: the log in order, paged with `after`) or `newest` first (the latest, paged back with `before`). */
      order: Schema.optional(Schema.Literal("oldest", "newest")),
      limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 1000))),
      /**
       * `false`: a live stream without text deltas (`model.delta`, never stored): a follower that
       * wants only what happened spares every server on the store making and sending them (unless
       * another follower wants them, as a stream of one run's events does).
       */
      deltas: Schema.optional(Schema.BooleanFromString.annotations({
        description: "false: a live stream without text deltas (model.delta, never stored); no server makes or sends them for it"
      })),
      /** A live stream with the text deltas of this conversation's runs only, and every other event the filter takes. */
      deltasOf: Schema.optional(Schema.String.annotations({
        description: "a conversation's id: a live stream with the text deltas of its runs only (every other event as filtered)"
      }))
    }))
    .addSuccess(EventPage)
) {}
