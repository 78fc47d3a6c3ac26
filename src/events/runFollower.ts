/**
 * A run followed: its stored events first, a page at a time as they are taken, then live ones from
 * its inbox, up to the event that ends the run. A follower that falls behind (its inbox overflowed
 * while it took nothing: a client that stopped reading) reads on from the store, page by page, then
 * live again.
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
 * The follower of a run whose first page of events numbered after `after` is `firstPage` (read once
 * its inbox was open), and of which the store said it had `ended` when it had none. `readPage`
 * reads on from the store, `pageSize` events at a time: after a full first page, and once it fell
 * behind. The inbox holds what is published meanwhile, so none falls between the last page and the
 * live events.
 */
export const runFollower = (
  inbox: EventInbox,
  firstPage: ReadonlyArray<FoundryEvent>,
  after: number,
  endedBefore: boolean,
  readPage: ReadPage,
  pageSize: number
): RunFollower => {
  let ended = endedBefore
  // The last event read from the store: one at or before it came with what was read.
  let readTo = after
  // The same, only ever as read from the store (`readTo` also jumps past what came live).
  let storeReadTo = after
  // The stored events handed on live since, by number: events come live as they are published,
  // which is not always in their order (a step's, published a moment after its commit, may come
  // after a later one's), so a page read on after falling behind skips these, not all below the last.
  let handedLive = new Set<number>()
  let stored: ReadonlyArray<FoundryEvent> | undefined = firstPage
  let reading = firstPage.length === pageSize
  let takeBackRead = nothingToTakeBack

  /** What of `events` goes on (those not handed on before), up to the run's end. */
  const fresh = (events: ReadonlyArray<FoundryEvent>, live: boolean): ReadonlyArray<FoundryEvent> => {
    const going: Array<FoundryEvent> = []
    // Put in the inbox while the store was read: an ephemeral event (a text delta) published before
    // a stored event that was read is part of what was read (its turn's text), and handed on after
    // it would add that text twice.
    const readPast = live ? events.findLastIndex((event) => event.seq !== 0 && event.seq <= storeReadTo) : -1
    for (const [index, event] of events.entries()) {
      if (event.seq === 0 && index < readPast) continue
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
      storeReadTo = Math.max(storeReadTo, events[events.length - 1]?.seq ?? storeReadTo)
      readTo = Math.max(readTo, storeReadTo)
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
