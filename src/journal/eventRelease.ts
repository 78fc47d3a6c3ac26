/**
 * Which release an event belongs to: a run's events carry the release whose code executes it,
 * even when another release is current by the time they happen (a run pinned to an earlier
 * release, a person's decision on its approval). Whoever works for a run says so here; the event
 * log stamps events with it, and with the current release otherwise.
 */
import { Effect, FiberRef } from "effect"

/** The release of the run the current fiber works for, when it works for one. */
export const eventRelease = FiberRef.unsafeMake<string | undefined>(undefined)

/**
 * Runs `effect` as work for a run of `release` (`null`: a run from before releases were recorded,
 * on the current one), unless the fiber already works for a run: the execution knows which code
 * it runs.
 */
export const withEventRelease = (release: string | null) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  release === null
    ? effect
    : Effect.flatMap(FiberRef.get(eventRelease), (working) => working === undefined ? Effect.locally(effect, eventRelease, release) : effect)
