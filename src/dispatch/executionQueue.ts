/**
 * Which run executes when, in this process: the runs of one conversation one after the other, in
 * the order they took their places (the conversation's lane), and at most `concurrency` runs at
 * once across conversations (the slots). A run starts once its place is first in its lane and it
 * has a slot; the slot passes to the longest-waiting ready run when a run leaves.
 *
 * Plain functions over arrays, not a `Deferred` per place and a semaphore: every run passes through
 * here, and those cost about a hundred fiber operations per run (docs/performance.md).
 */

/** Where a place is: waiting for the runs before it, ready (first in its lane) waiting for a slot, started, or left. */
type PlaceState = "waiting" | "ready" | "started" | "left"

/** A run's place in its conversation's lane. */
export class Place {
  /** The queue's, as the place moves on. */
  state: PlaceState = "waiting"
  /** Starts the run; set when the run is scheduled (a place is taken before its run is written). */
  start: (() => void) | undefined = undefined

  constructor(readonly conversationId: string) {}
}

/** The lanes and slots of this process. */
export const makeExecutionQueue = (concurrency: number) => {
  const lanes = new Map<string, Array<Place>>()
  // First in their lanes, waiting for a slot, longest-waiting first.
  const ready: Array<Place> = []
  let free = concurrency
  let closed = false

  const begin = (place: Place): void => {
    if (closed || place.state !== "waiting" || place.start === undefined) return
    if (lanes.get(place.conversationId)?.[0] !== place) return
    if (free === 0) {
      place.state = "ready"
      ready.push(place)
      return
    }
    free--
    place.state = "started"
    place.start()
  }

  const passSlot = (): void => {
    const next = closed ? undefined : ready.shift()
    if (next === undefined) {
      free++
      return
    }
    next.state = "started"
    next.start?.()
  }

  const leave = (place: Place): void => {
    const was = place.state
    if (was === "left") return
    place.state = "left"
    if (was === "ready") {
      const at = ready.indexOf(place)
      if (at >= 0) ready.splice(at, 1)
    }
    const lane = lanes.get(place.conversationId)
    if (lane !== undefined) {
      const at = lane.indexOf(place)
      if (at >= 0) lane.splice(at, 1)
      if (lane.length === 0) lanes.delete(place.conversationId)
    }
    if (was === "started") passSlot()
    const first = lane?.[0]
    if (first !== undefined) begin(first)
  }

  return {
    /** Whether the conversation has a run here, executing or waiting. */
    busy: (conversationId: string): boolean => lanes.has(conversationId),

    /** The back of the conversation's lane, taken at once. */
    enter: (conversationId: string): Place => {
      const place = new Place(conversationId)
      const lane = lanes.get(conversationId)
      if (lane === undefined) lanes.set(conversationId, [place])
      else lane.push(place)
      return place
    },

    /**
     * Starts the place's run with `start` once the runs before it have left and a slot is free (now,
     * if they are). False when the queue is closed: the place is left, nothing starts.
     */
    schedule: (place: Place, start: () => void): boolean => {
      if (closed) {
        leave(place)
        return false
      }
      place.start = start
      begin(place)
      return true
    },

    /**
     * Gives a place up (its run ended, was cancelled, or its submission failed): its slot, if it had
     * one, goes to the next ready run, and the run behind it starts if it is now first. A place that
     * leaves while it waits lets nobody start beside the run still executing before it.
     */
    leave,

    /** Starts nothing more (the executor is shutting down). */
    close: (): void => {
      closed = true
    }
  }
}
