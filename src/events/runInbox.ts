/**
 * One follower's live events of one run: the log puts each event in as it is published, and the
 * follower takes whatever has come since its last take, all at once, handed to a callback. One
 * reader, no capacity, no fiber: a `Queue` costs about twenty fiber operations per take, and a
 * run's SSE stream takes once per step of the run (docs/performance.md).
 */
import type { FoundryEvent } from "./FoundryEvent.js"

/** A run follower's inbox. */
export interface RunInbox {
  /** Adds an event; the follower waiting for one gets it once `wake` is called. */
  readonly put: (event: FoundryEvent) => void
  /** Hands what was put since the last take to the follower waiting, if any. */
  readonly wake: () => void
  /** Hands the events put since the last take (at least one) to `taker`: now, or once `wake` has some. */
  readonly takeWith: (taker: (events: ReadonlyArray<FoundryEvent>) => void) => void
  /** Takes back the taker waiting, if any: it is not called (a follower that stopped waiting). */
  readonly withdraw: () => void
  /** Ends the inbox: a taker waiting now is never called. */
  readonly close: () => void
}

/** An empty inbox. */
export const makeRunInbox = (): RunInbox => {
  let events: Array<FoundryEvent> = []
  let waiting: ((taken: ReadonlyArray<FoundryEvent>) => void) | undefined
  const takeAll = (): ReadonlyArray<FoundryEvent> => {
    const taken = events
    events = []
    return taken
  }
  return {
    put: (event) => {
      events.push(event)
    },
    wake: () => {
      if (waiting === undefined || events.length === 0) return
      const taker = waiting
      waiting = undefined
      taker(takeAll())
    },
    takeWith: (taker) => {
      if (events.length > 0) return taker(takeAll())
      waiting = taker
    },
    withdraw: () => {
      waiting = undefined
    },
    close: () => {
      waiting = undefined
      events = []
    }
  }
}
