/**
 * A run followed: its stored events first, then live ones from its inbox, up to the event that
 * ends the run.
 */
import { type FoundryEvent, runEndTypes } from "./FoundryEvent.js"
import type { EventInbox } from "./eventInbox.js"

/**
 * A run's events as they are followed: each call hands the next ones to `deliver`, now or once
 * they are published; `undefined` once the run has ended, or the follower fell behind (its inbox
 * overflowed: `eventInbox.ts`). The stored events come first, then the live ones, up to the event
 * that ends the run. A callback rather than an effect, for a writer that forwards them without a
 * fiber of its own (an SSE response); one call at a time. It returns what takes the call back
 * while it waits (`deliver` is then not called).
 */
export type RunFollower = (deliver: (events: ReadonlyArray<FoundryEvent> | undefined) => void) => () => void

const isRunEnd = (event: FoundryEvent): boolean => runEndTypes.has(event.type)

/**
 * The follower of a run whose events numbered after `after` are `history` (read once its inbox was
 * open), and of which the store said it had `ended` when it had none.
 */
export const runFollower = (inbox: EventInbox, history: ReadonlyArray<FoundryEvent>, after: number, endedBefore: boolean): RunFollower => {
  let ended = endedBefore
  const lastSeq = history[history.length - 1]?.seq ?? after
  let stored: ReadonlyArray<FoundryEvent> | undefined = history
  const end = history.findIndex(isRunEnd)
  if (end >= 0) {
    stored = history.slice(0, end + 1)
    ended = true
  }
  // What came live since the last take, up to the run's end (an event stored before is not again).
  const live = (deliver: (events: ReadonlyArray<FoundryEvent> | undefined) => void): void =>
    inbox.takeWith((taken) => {
      // Fallen behind (a client that stopped reading): nothing more comes; its client reads on from the store.
      if (taken === undefined) return deliver(undefined)
      const fresh: Array<FoundryEvent> = []
      for (const event of taken) {
        if (event.seq !== 0 && event.seq <= lastSeq) continue
        fresh.push(event)
        if (isRunEnd(event)) {
          ended = true
          break
        }
      }
      if (fresh.length === 0) live(deliver)
      else deliver(fresh)
    })
  const nothingToTakeBack = () => {}
  const follower: RunFollower = (deliver) => {
    const first = stored
    stored = undefined
    if (first !== undefined && first.length > 0) deliver(first)
    else if (ended) deliver(undefined)
    else {
      live(deliver)
      return inbox.withdraw
    }
    return nothingToTakeBack
  }
  return follower
}
