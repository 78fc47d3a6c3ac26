/**
 * One follower's live events of one run: the log puts each event in as it is published, and the
 * follower takes whatever has come since its last take, all at once. One reader, no capacity, no
 * shutdown: what a `Queue` offers beyond that costs about twenty fiber operations per take, and a
 * run's SSE stream takes once per step of the run (docs/performance.md).
 */
import { Effect } from "effect"
import type { FoundryEvent } from "./FoundryEvent.js"

/** A run follower's inbox. */
export interface RunInbox {
  /** Adds an event; the follower waiting for one gets it once `wake` is called. */
  readonly put: (event: FoundryEvent) => void
  /** Hands what was put since the last take to the follower waiting, if any. */
  readonly wake: () => void
  /** The events put since the last take (at least one): now, or once `wake` has some. */
  readonly take: Effect.Effect<ReadonlyArray<FoundryEvent>>
  /** Ends the inbox: a take waiting now is interrupted, as a shut-down queue's would be. */
  readonly close: () => void
}

/** An empty inbox. */
export const makeRunInbox = (): RunInbox => {
  let events: Array<FoundryEvent> = []
  // Told what was taken, or `undefined` when the inbox is closed.
  let waiting: ((taken: ReadonlyArray<FoundryEvent> | undefined) => void) | undefined
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
      const resume = waiting
      waiting = undefined
      resume(takeAll())
    },
    take: Effect.async<ReadonlyArray<FoundryEvent>>((resume) => {
      if (events.length > 0) return resume(Effect.succeed(takeAll()))
      waiting = (taken) => resume(taken === undefined ? Effect.interrupt : Effect.succeed(taken))
      return Effect.sync(() => {
        waiting = undefined
      })
    }),
    close: () => {
      const resume = waiting
      waiting = undefined
      events = []
      resume?.(undefined)
    }
  }
}
