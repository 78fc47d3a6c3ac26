/**
 * One follower's live events (of one run, or of the feed under a filter): the log puts each event
 * in as it is published, and the follower takes whatever has come since its last take, all at
 * once, handed to a callback. One reader, no fiber: a `Queue` costs about twenty fiber operations
 * per take, and a run's SSE stream takes once per step of the run (docs/performance.md).
 *
 * An inbox holds at most `inboxCapacity` events. A follower that takes none for that long (an SSE
 * client that stopped reading: its response waits for the socket to drain, and the events pile up
 * here) falls behind: its events are dropped at once, and its next take is told so (`undefined`):
 * it reads on from the store after the last event it got, and starts the inbox over (`reset`).
 */
import type { FoundryEvent } from "./FoundryEvent.js"

/** The events an inbox holds for a follower that takes none, at most. */
export const inboxCapacity = 10_000

/** A follower's inbox. */
export interface EventInbox {
  /** Adds an event; the follower waiting for one gets it once `wake` is called. */
  readonly put: (event: FoundryEvent) => void
  /** Hands what was put since the last take to the follower waiting, if any. */
  readonly wake: () => void
  /**
   * Hands the events put since the last take (at least one) to `taker`: now, or once `wake` has
   * some; `undefined` once the follower has fallen behind (nothing more comes).
   */
  readonly takeWith: (taker: (events: ReadonlyArray<FoundryEvent> | undefined) => void) => void
  /** Takes back the taker waiting, if any: it is not called (a follower that stopped waiting). */
  readonly withdraw: () => void
  /** Ends the inbox: a taker waiting now is never called. */
  readonly close: () => void
  /** Empties the inbox of a follower that fell behind and read on from the store: it takes what is put from now. */
  readonly reset: () => void
}

/** An empty inbox that holds up to `capacity` events. */
export const makeEventInbox = (capacity = inboxCapacity): EventInbox => {
  let events: Array<FoundryEvent> = []
  let behind = false
  let waiting: ((taken: ReadonlyArray<FoundryEvent> | undefined) => void) | undefined
  const takeAll = (): ReadonlyArray<FoundryEvent> | undefined => {
    if (behind) return undefined
    const taken = events
    events = []
    return taken
  }
  return {
    put: (event) => {
      if (behind) return
      if (events.length < capacity) return void events.push(event)
      behind = true
      events = []
    },
    wake: () => {
      if (waiting === undefined || (events.length === 0 && !behind)) return
      const taker = waiting
      waiting = undefined
      taker(takeAll())
    },
    takeWith: (taker) => {
      if (events.length > 0 || behind) return taker(takeAll())
      waiting = taker
    },
    withdraw: () => {
      waiting = undefined
    },
    close: () => {
      waiting = undefined
      events = []
    },
    reset: () => {
      behind = false
      events = []
    }
  }
}
