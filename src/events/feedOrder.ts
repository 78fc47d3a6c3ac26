/**
 * The events feed across processes, in the order of the events' numbers, so that a client that
 * resumes after the last number it got (`Last-Event-ID`) misses none. An event of this process
 * numbered after one of another process that the tail has not read yet is held back, and the tail
 * is asked to look at once. Events commit in the order of their numbers (on SQLite one writer
 * numbers them as it writes; on PostgreSQL a lock orders them), so what the tail reads up to a
 * number is every event up to it, and a number it does not find there never comes. An ephemeral
 * event made here (a text delta, never numbered) waits behind the events held back before it.
 */
import type { FoundryEvent } from "./FoundryEvent.js"

/** What the order hands events to, and asks of the tail. */
export interface FeedOutlet {
  /** Whether anyone follows the feed now: with nobody, nothing is held. */
  readonly subscribed: () => boolean
  /** Hands events on, in order, in the step that decides what goes (a later call cannot hand on higher numbers first). */
  readonly deliver: (events: ReadonlyArray<FoundryEvent>) => void
  /** The tail should look now: an event waits for one it has not read. */
  readonly lookNow: () => void
}

/** The feed's order: `inOrder` takes stored events, read by the tail up to `readTo` (else published here). */
export const makeFeedOrder = (outlet: FeedOutlet) => {
  // Every event numbered up to `handedOnTo` has been handed on (or was stored before the feed's
  // followers read what is stored).
  let handedOnTo = 0
  const held = new Map<number, FoundryEvent>()
  // Ephemeral events made while some were held, each after the highest number held then (in order).
  let waiting: Array<{ readonly after: number; readonly event: FoundryEvent }> = []
  return {
    inOrder: (stored: ReadonlyArray<FoundryEvent>, readTo = 0): void => {
      if (!outlet.subscribed()) {
        // Nobody to hand them to (one who comes reads what is stored first): on the run's path, no more than this.
        for (const event of stored) if (event.seq > handedOnTo) handedOnTo = event.seq
        if (readTo > handedOnTo) handedOnTo = readTo
        if (held.size > 0) held.clear()
        waiting = []
        return
      }
      const ready: Array<FoundryEvent> = []
      /** The ephemeral events waiting before the event numbered `seq`. */
      const waitingBefore = (seq: number) => {
        while (waiting.length > 0 && waiting[0]!.after < seq) ready.push(waiting.shift()!.event)
      }
      for (const event of stored) {
        if (event.seq > handedOnTo) held.set(event.seq, event)
        else if (event.seq > 0) continue
        else if (held.size === 0 && waiting.length === 0) ready.push(event)
        else waiting.push({ after: Math.max(handedOnTo, ...held.keys(), waiting[waiting.length - 1]?.after ?? 0), event })
      }
      if (readTo > handedOnTo) {
        // Every event up to `readTo` is among those read: the held ones up to there go, gaps and all.
        const read = [...held.values()].filter((event) => event.seq <= readTo).sort((a, b) => a.seq - b.seq)
        for (const event of read) {
          waitingBefore(event.seq)
          ready.push(event)
          held.delete(event.seq)
        }
        handedOnTo = readTo
      }
      for (let next = held.get(handedOnTo + 1); next !== undefined; next = held.get(handedOnTo + 1)) {
        waitingBefore(next.seq)
        ready.push(next)
        held.delete(next.seq)
        handedOnTo = next.seq
      }
      waitingBefore(handedOnTo + 1)
      if (held.size > 0) outlet.lookNow()
      outlet.deliver(ready)
    }
  }
}
