/**
 * What other processes on the store write (a second server, `foundry run`, a cluster's runners),
 * for the followers here: while anyone here follows, the tail reads the store's events on from
 * where it has read, every `pollEvery` or at once when asked, and hands those nobody here published
 * to their runs' followers and to the feed. The ephemeral events other processes send
 * (`liveRelay.ts`) wait here for their place among them.
 */
import { Duration, Effect, Queue, Scope } from "effect"
import type { StoreError } from "../durable/StoreError.js"
import type { EventStorage } from "./EventStorage.js"
import type { FoundryEvent } from "./FoundryEvent.js"
import { relayArrivals } from "./liveRelay.js"

/** Where the tail hands what it reads. */
export interface TailOutlet {
  readonly toRunFollowers: (events: ReadonlyArray<FoundryEvent>) => void
  readonly toFeed: (events: ReadonlyArray<FoundryEvent>) => void
  /** The feed's events in the order of their numbers (`feedOrder.ts`), every one up to `readTo` read. */
  readonly feedInOrder: (events: ReadonlyArray<FoundryEvent>, readTo: number) => void
  /** Whether run `runId`'s events are followed here (with someone following at all). */
  readonly wanted: (runId: string) => boolean
  /** Whether the ephemeral events (text deltas) of run `runId` of conversation `conversationId` are followed here. */
  readonly wantedLive: (runId: string, conversationId: string) => boolean
  /** At every look while anyone follows. */
  readonly looked: (now: number) => void
}

/** How long the number of an event published here is remembered at least: the tail may have read it before it was published here. */
const rememberPublished = 2000

const pageSize = 1000

/** The tail of the store `storage` writes to, for as long as the scope is open. */
export const makeStoreTail = (options: {
  readonly storage: EventStorage["Type"]
  readonly pollEvery: Duration.DurationInput
  readonly outlet: TailOutlet
}) =>
  Effect.gen(function*() {
    const { outlet, pollEvery, storage } = options
    let followers = 0
    // The sequence numbers published lately (and when), so that an event of this process the tail
    // reads is not handed to its run's followers a second time (forgotten by `forgetOld`).
    const seen = new Map<number, number>()
    // How far the tail has read the store; where it starts when it wakes: the newest event after a
    // while nobody followed.
    let tailAt = 0
    let tailFrom: "newest" | "where it is" = "newest"
    // The highest number published here: what the ephemeral events made here come after.
    let publishedUpTo = 0
    // Oldest first (a Map keeps the order numbers were published in, and the time only grows): it
    // stops at the first one still wanted, so it costs what it forgets. One published within the
    // last two seconds is wanted (the tail may have read it before it was published here, and holds it
    // for its next look), and while someone follows, one the tail has not read past yet, however
    // old (a tail behind would publish it again).
    const forgetOld = (now: number) => {
      const following = tailFrom === "where it is"
      for (const [seq, at] of seen) {
        if (now - at <= rememberPublished || (following && seq > tailAt)) return
        seen.delete(seq)
      }
    }
    // Events a look found that nobody here had published: handed to their runs' followers once a
    // poll interval has passed since if still not (an event of this process is published just
    // after its commit, so a look in between would otherwise publish it a second time; the tail
    // also looks at once when the feed holds an event back, so the next look may be the moment
    // after). (The feed takes what the tail reads at once: it hands on each number once, in order.)
    let unseen: Array<{ readonly event: FoundryEvent; readonly readAt: number }> = []
    // The tail looks at once when woken (else every `pollEvery`): by the first follower, by an
    // event of this process the feed holds back, by an ephemeral event waiting for its place.
    const lookNow = yield* Queue.sliding<void>(1)
    const wake = () => Queue.unsafeOffer(lookNow, undefined)

    const arrivals = relayArrivals({
      readTo: () => tailAt,
      wanted: outlet.wantedLive,
      // The stored events of the run up to there that the tail read and holds back for a while go first.
      before: (runId, after) => {
        const before = unseen.filter((entry) => entry.event.runId === runId && entry.event.seq <= after && !seen.has(entry.event.seq))
        if (before.length === 0) return
        const taken = new Set(before)
        unseen = unseen.filter((entry) => !taken.has(entry))
        const now = Date.now()
        for (const entry of before) seen.set(entry.event.seq, now)
        outlet.toRunFollowers(before.map((entry) => entry.event))
      },
      toRunFollowers: outlet.toRunFollowers,
      toFeed: outlet.toFeed,
      lookNow: wake
    })

    /**
     * Counts a follower for as long as the scope is open. The first after a while without any
     * starts the tail from the newest event stored, before the follower reads what is stored: what
     * other processes write after that is the tail's.
     */
    const following: Effect.Effect<void, StoreError, Scope.Scope> = Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(Effect.scope, (scope) => {
        // Counted at once, in the step that starts the tail: a tail that looks in between with
        // nobody counted would go back to sleep, and the next follower would start it again later on.
        const counted = () => {
          if (followers++ === 0) wake()
          return Scope.addFinalizer(scope, Effect.sync(() => followers--))
        }
        if (tailFrom === "where it is") return counted()
        return Effect.flatMap(
          restore(storage.newestSeq),
          (newest) => {
            // Another follower that came at the same time may have started it already.
            if (tailFrom === "where it is") return counted()
            tailAt = newest
            tailFrom = "where it is"
            // What is stored up to here, the feed's followers read for themselves.
            outlet.feedInOrder([], tailAt)
            return counted()
          }
        )
      }))

    const unseenFor = Duration.toMillis(Duration.decode(pollEvery))
    const isPublished = (seq: number) => seen.has(seq)
    yield* Effect.gen(function*() {
      if (followers === 0) {
        tailFrom = "newest"
        // Numbers the next tail starts after (see `published`).
        seen.clear()
        unseen = []
        arrivals.clear()
        return yield* Queue.take(lookNow)
      }
      const now = Date.now()
      const due = unseen.findIndex(({ readAt }) => now - readAt < unseenFor)
      const ready = (due < 0 ? unseen : unseen.slice(0, due)).flatMap(({ event }) => seen.has(event.seq) ? [] : [event])
      unseen = due < 0 ? [] : unseen.slice(due)
      for (const event of ready) seen.set(event.seq, now)
      outlet.toRunFollowers(ready)
      // On from where the tail has read: events commit in the order of their numbers, so none
      // numbered lower commits later. Page after page until one is not full: a tail that reads
      // less than is written falls behind. What was published here is not read back: a page holds
      // the other processes' events (and this one's the tail reads before they are published here).
      let full = false
      do {
        const look = yield* storage.readOn(tailAt, pageSize, isPublished)
        const page = look.events
        full = look.full
        const readAt = Date.now()
        for (const event of page) unseen.push({ event, readAt })
        const readTo = look.readTo
        // Ephemeral events of other processes placed among these go in their places: the events
        // up to each place first, then those placed there, then the rest.
        for (const place of arrivals.placesUpTo(readTo)) {
          tailAt = Math.max(tailAt, place)
          outlet.feedInOrder(page.filter((event) => event.seq <= place), tailAt)
          arrivals.release()
        }
        tailAt = readTo
        outlet.feedInOrder(page, tailAt)
      } while (full)
      arrivals.release()
      forgetOld(now)
      outlet.looked(now)
      yield* Effect.timeout(Queue.take(lookNow), pollEvery).pipe(Effect.ignore)
    }).pipe(
      Effect.catchAllCause((cause) => Effect.zipRight(Effect.logWarning("reading other processes' events failed", cause), Effect.sleep(pollEvery))),
      Effect.forever,
      Effect.forkScoped
    )

    return {
      following,
      followers: () => followers,
      lookNow: wake,
      arrivals,
      publishedUpTo: () => publishedUpTo,
      /**
       * Stored events published here: remembered, so that the tail hands none of them on again.
       * The result is those not handed to their runs' followers already (ahead of an ephemeral
       * event of another process that came after them).
       */
      published: (stored: ReadonlyArray<FoundryEvent>): ReadonlyArray<FoundryEvent> => {
        for (const event of stored) if (event.seq > publishedUpTo) publishedUpTo = event.seq
        // With no tail reading, none of these goes to anyone twice: a tail starts after the newest
        // number stored when it starts, and an event committed after that read and published
        // before the tail goes on from there is in what each follower reads once it has started
        // the tail, which it takes nothing again of (nor the feed's order any number it has handed
        // on). Remembered, each would cost a map's entry on every run's path for nothing.
        if (tailFrom === "newest") return stored
        let fresh = stored
        const now = Date.now()
        for (const event of stored) {
          if (event.seq === 0) continue
          if (seen.has(event.seq)) fresh = fresh.filter((other) => other !== event)
          seen.set(event.seq, now)
        }
        forgetOld(now)
        return fresh
      }
    }
  })

/** A store's tail. */
export type StoreTail = Effect.Effect.Success<ReturnType<typeof makeStoreTail>>
