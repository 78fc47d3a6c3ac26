/**
 * The conversation leases this process's runs hold: one fiber renews them all every third of the
 * TTL (concurrent renewals share a transaction), and idles while none is held, so an idle process
 * does not wake every second. A run whose lease another executor took over, or that another
 * process ended (a cancel), is told (`lost`), its writes being fenced off already; a lease the
 * run's own step released (its end, its suspension) is no longer renewed, and nobody is told.
 */
import { type Context, Duration, Effect, Queue } from "effect"
import type { Lease } from "../journal/journalRecords.js"
import type { RunJournal } from "../journal/RunJournal.js"

/** Renews held leases in the current scope; `lost` is called with the run whose lease was taken over. */
export const makeHeldLeases = (
  journal: Context.Tag.Service<RunJournal>,
  ttlMillis: number,
  lost: (runId: string) => Effect.Effect<void>
) =>
  Effect.gen(function*() {
    const held = new Map<Lease, string>()
    const firstHeld = yield* Queue.sliding<void>(1)
    yield* Effect.gen(function*() {
      if (held.size === 0) yield* Queue.take(firstHeld)
      yield* Effect.sleep(Duration.millis(ttlMillis / 3))
      yield* Effect.forEach([...held], ([lease, runId]) =>
        journal.renew(lease, runId, ttlMillis).pipe(
          Effect.flatMap((renewal) => {
            if (renewal === "Renewed") return Effect.void
            // Told once, and only while still held: an execution that found the lease taken itself
            // (a step fenced off) has let it go by the time a renewal begun before that answers.
            const stillHeld = held.delete(lease)
            return stillHeld && renewal === "Taken" ? lost(runId) : Effect.void
          }),
          Effect.catchAllCause((cause) => Effect.logWarning("could not renew a conversation lease", cause))
        ), { concurrency: "unbounded", discard: true })
    }).pipe(Effect.forever, Effect.forkScoped)

    return {
      /** Renews `lease` for `runId` until it is let go. */
      hold: (lease: Lease, runId: string): Effect.Effect<void> =>
        Effect.suspend(() => {
          held.set(lease, runId)
          return held.size === 1 ? Queue.offer(firstHeld, undefined) : Effect.void
        }),
      /** Stops renewing `lease` and releases it (once: a step may have released it already). */
      letGo: (lease: Lease): Effect.Effect<void> =>
        Effect.zipRight(Effect.sync(() => held.delete(lease)), Effect.ignore(journal.release(lease)))
    }
  })
