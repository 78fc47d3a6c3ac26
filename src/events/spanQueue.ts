/**
 * Finished spans waiting to be exported: at most `capacity`, and when full the oldest is dropped
 * for the newest (the recent past is what someone looking at a backend after an outage wants).
 * Adding never waits, so an export that stalls never holds up the event stream it is built from.
 * Effect's sliding queue drops the same way but does not say when it dropped.
 */
import { Effect } from "effect"

/** A bounded queue that drops its oldest item for a new one, and says so. */
export interface SpanQueue<A> {
  /** Adds `item`; `true` when the oldest was dropped for it. */
  readonly offer: (item: A) => Effect.Effect<boolean>
  /** Waits until there is at least one item. */
  readonly whenSome: Effect.Effect<void>
  /** How many items wait. */
  readonly size: Effect.Effect<number>
  /** Takes up to `max` items, oldest first, without waiting. */
  readonly take: (max: number) => Effect.Effect<ReadonlyArray<A>>
}

/** An empty queue of `capacity` items. */
export const make = <A>(capacity: number): Effect.Effect<SpanQueue<A>> =>
  Effect.map(Effect.makeLatch(false), (nonEmpty) => {
    const items: Array<A> = []
    return {
      offer: (item) =>
        Effect.sync(() => {
          items.push(item)
          nonEmpty.unsafeOpen()
          if (items.length <= capacity) return false
          items.shift()
          return true
        }),
      whenSome: nonEmpty.await,
      size: Effect.sync(() => items.length),
      take: (max) =>
        Effect.sync(() => {
          const taken = items.splice(0, max)
          if (items.length === 0) nonEmpty.unsafeClose()
          return taken
        })
    }
  })
