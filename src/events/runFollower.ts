/**
 * A run followed: its stored events first, then live ones from its inbox, up to the event that
 * ends the run. A follower that falls behind (its inbox overflowed while it took nothing: a client
 * that stopped reading) reads on from the store, page by page, then live again.
 */
import { type FoundryEvent, runEndTypes } from "./FoundryEvent.js"
import { type EventInbox, inboxCapacity } from "./eventInbox.js"

/**
 * A run's events as they are followed: each call hands the next ones to `deliver`, now or once
 * they are published or read; `undefined` once the run has ended, or the store could not be read
 * for a follower that fell behind (its client follows on with `Last-Event-ID`). The stored events
 * come first, then the live ones, up to the event that ends the run. A callback rather than an
 * effect, for a writer that forwards them without a fiber of its own (an SSE response); one call at
 * a time. It returns what takes the call back while it waits (`deliver` is then not called).
 */
export type RunFollower = (deliver: (events: ReadonlyArray<FoundryEvent> | undefined) => void) => () => void

/**
 * Reads a page of the run's stored events numbered after `after` and hands it to `done`
 * (`undefined`: the store failed); returns what takes the read back (`done` is then not called).
 */
export type ReadPage = (after: number, done: (page: ReadonlyArray<FoundryEvent> | undefined) => void) => () => void

const isRunEnd = (event: FoundryEvent): boolean => runEndTypes.has(event.type)

const nothingToTakeBack = () => {}

/**
 * The follower of a run whose events numbered after `after` are `history` (read once its inbox was
 * open), and of which the store said it had `ended` when it had none. `readPage` reads on from the
 * store once it fell behind, `pageSize` events at a time.
 */
export const runFollower = (
  inbox: EventInbox,
  history: ReadonlyArray<FoundryEvent>,
  after: number,
  endedBefore: boolean,
  readPage: ReadPage,
  pageSize: number
): RunFollower => {
  let ended = endedBefore
  // The last event read from the store: one at or before it came with what was read.
  let readTo = after
  // The stored events handed on live since, by number: events come live as they are published,
  // which is not always in their order (a step's, published a moment after its commit, may come
  // after a later one's), so a page read on after falling behind skips these, not all below the last.
  let handedLive = new Set<number>()
  let stored: ReadonlyArray<FoundryEvent> | undefined = history
  let reading = false
  let takeBackRead = nothingToTakeBack

  /** What of `events` goes on (those not handed on before), up to the run's end. */
  const fresh = (events: ReadonlyArray<FoundryEvent>, live: boolean): ReadonlyArray<FoundryEvent> => {
    const going: Array<FoundryEvent> = []
    for (const event of events) {
      if (event.seq !== 0) {
        if (event.seq <= readTo || handedLive.has(event.seq)) continue
        if (live) handedLive.add(event.seq)
      }
      going.push(event)
      if (isRunEnd(event)) {
        ended = true
        break
      }
    }
    if (!live) {
      readTo = Math.max(readTo, events[events.length - 1]?.seq ?? readTo)
      for (const seq of handedLive) if (seq <= readTo) handedLive.delete(seq)
    } else if (handedLive.size > inboxCapacity) {
      // A run followed live for that long: an event published out of order comes within a moment,
      // never ten thousand events later, so what is below the highest is known to have come.
      for (const seq of handedLive) if (seq > readTo) readTo = seq
      handedLive = new Set()
    }
    return going
  }

  const next = (deliver: (events: ReadonlyArray<FoundryEvent> | undefined) => void): void => {
    if (ended) return deliver(undefined)
    if (reading) return read(deliver)
    inbox.takeWith((taken) => {
      if (taken === undefined) {
        // What was let go is in the store: read on after the last event handed on, and live again after.
        inbox.reset()
        reading = true
        return read(deliver)
      }
      const going = fresh(taken, true)
      if (going.length === 0) next(deliver)
      else deliver(going)
    })
  }

  const read = (deliver: (events: ReadonlyArray<FoundryEvent> | undefined) => void): void => {
    // A page read at once (the store answered before `readPage` returned) has nothing to take back.
    let done = false
    const takeBackThis = readPage(readTo, (page) => {
      done = true
      takeBackRead = nothingToTakeBack
      if (page === undefined) {
        ended = true
        return deliver(undefined)
      }
      reading = page.length === pageSize
      const going = fresh(page, false)
      if (going.length === 0) next(deliver)
      else deliver(going)
    })
    if (!done) takeBackRead = takeBackThis
  }

  const takeBack = () => {
    inbox.withdraw()
    const reading = takeBackRead
    takeBackRead = nothingToTakeBack
    reading()
  }

  return (deliver) => {
    const first = stored === undefined ? [] : fresh(stored, false)
    stored = undefined
    if (first.length > 0) {
      deliver(first)
      return nothingToTakeBack
    }
    next(deliver)
    return takeBack
  }
}
