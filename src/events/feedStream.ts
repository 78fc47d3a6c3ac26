/**
 * A follower of the event feed as a stream: stored events matching its filter after a sequence
 * number, page by page as they are taken, then live ones: subscribed first, so none falls between.
 * A follower that falls behind (its inbox overflowed while it took nothing) reads on from the store
 * after the last event it got, and then live again. One stage, as every follower of the feed pays
 * it per chunk.
 */
import { Chunk, Effect, Option, type Scope, Stream } from "effect"
import type { StoreError } from "../durable/StoreError.js"
import type { EventInbox } from "./eventInbox.js"
import { type EventFilter, matchesFilter } from "./EventStorage.js"
import type { FoundryEvent } from "./FoundryEvent.js"

/** Where a feed follower's events come from: the event log's live inboxes and its storage. */
export interface FeedSource {
  /** An inbox of the live events for a filter, for as long as the scope is open. */
  readonly subscribe: (filter: EventFilter) => Effect.Effect<EventInbox, never, Scope.Scope>
  /** Counts a follower for as long as the scope is open (cross-process: reads what others write). */
  readonly following: Effect.Effect<void, StoreError, Scope.Scope>
  /** Stored events, in order. */
  readonly list: (filter: EventFilter) => Effect.Effect<ReadonlyArray<FoundryEvent>, StoreError>
  /** How many stored events a page reads. */
  readonly pageSize: number
  /** Told of every page read from the store. */
  readonly read: (page: ReadonlyArray<FoundryEvent>) => void
}

/** Every event matching `filter` with `seq` after `after`, from `source`, stored then live; never ends. */
export const feedStream = (source: FeedSource, filter: EventFilter, after: number): Stream.Stream<FoundryEvent, StoreError> =>
  Stream.unwrapScoped(Effect.gen(function*() {
    const inbox = yield* source.subscribe(filter)
    yield* source.following
    // The last stored event handed on: a page reads after it, and a live one at or before it came already.
    let cursor = after
    let reading = true
    const nextLive: Effect.Effect<Chunk.Chunk<FoundryEvent>, Option.Option<StoreError>> = Effect.flatMap(
      Effect.async<ReadonlyArray<FoundryEvent> | undefined>((resume) => {
        inbox.takeWith((taken) => resume(Effect.succeed(taken)))
        return Effect.sync(inbox.withdraw)
      }),
      (taken) => {
        if (taken === undefined) {
          // Fallen behind: what was dropped is in the store, read from after the last one handed on.
          inbox.reset()
          reading = true
          return nextPage
        }
        // A run's own inbox holds every event of the run: the filter's other fields are looked at here.
        const fresh = taken.filter((event) => (event.seq === 0 || event.seq > cursor) && matchesFilter(filter, event))
        for (const event of fresh) if (event.seq > cursor) cursor = event.seq
        return fresh.length === 0 ? nextLive : Effect.succeed(Chunk.unsafeFromArray(fresh))
      }
    )
    const nextPage: Effect.Effect<Chunk.Chunk<FoundryEvent>, Option.Option<StoreError>> = Effect.flatMap(
      Effect.suspend(() => Effect.mapError(source.list({ ...filter, after: cursor, limit: source.pageSize }), Option.some)),
      (page) => {
        reading = page.length === source.pageSize
        cursor = page[page.length - 1]?.seq ?? cursor
        source.read(page)
        return page.length > 0 ? Effect.succeed(Chunk.unsafeFromArray(page)) : nextLive
      }
    )
    return Stream.repeatEffectChunkOption(Effect.suspend(() => reading ? nextPage : nextLive))
  }))
