/**
 * The event log: every step is an event, stored durably (text deltas excepted) and fanned out
 * live, so an SSE client can replay a run's history and then follow it as it happens.
 */
import { Chunk, Clock, Context, Duration, Effect, Layer, Option, PubSub, Queue, Schedule, Scope, Stream } from "effect"
import { Database } from "../durable/Database.js"
import { newId } from "../durable/ids.js"
import { finalStatuses } from "../durable/records.js"
import { Store } from "../durable/Store.js"
import type { StoreError } from "../durable/StoreError.js"
import { type EventFilter, EventStorage, insertEvents, matchesFilter, sequenced, type UnsequencedEvent } from "./EventStorage.js"
import { heldInScope } from "./heldInScope.js"
import { type AnyEvent, ephemeralTypes, type FoundryEvent, withEnvelope } from "./FoundryEvent.js"
import { makeFeedOrder } from "./feedOrder.js"
import { announceEvery, type LiveRelay, makeLiveRelay, relayArrivals } from "./liveRelay.js"
import { makeRunInbox, type RunInbox } from "./runInbox.js"
import { type RunFollower, runFollower } from "./runFollower.js"

export type { RunFollower } from "./runFollower.js"

/** An event before the log gives it an id, a time, a release and a sequence number (any type, its `data` that type's). */
export type EventDraft = AnyEvent<"id" | "seq" | "time" | "release">

/**
 * The drafts as events of `release` at `time`, each with an id of its own, numbered 0: as an
 * ephemeral event is published, until the store numbers a stored one.
 */
const stampDrafts = (drafts: ReadonlyArray<EventDraft>, time: number, release: string): ReadonlyArray<FoundryEvent> =>
  drafts.map((draft) => withEnvelope(draft, { id: newId("evt"), time, release, seq: 0 }))


/** The event log. */
export class EventLog extends Context.Tag("foundry/EventLog")<EventLog, {
  /** Records an event (unless it is ephemeral) and publishes it to live subscribers. */
  readonly emit: (draft: EventDraft) => Effect.Effect<FoundryEvent, StoreError>
  /** Publishes ephemeral events (text deltas) to live subscribers together, never stored. */
  readonly emitLive: (drafts: ReadonlyArray<EventDraft>) => Effect.Effect<void>
  /**
   * The drafts as events: each with its id, the time and the release (`at`, when the writer
   * knows both; else now, and the release of the fiber's work). Writers that store events with
   * other rows (the run journal) stamp them here.
   */
  readonly stamp: (
    drafts: ReadonlyArray<EventDraft>,
    at?: { readonly time: number; readonly release: string }
  ) => Effect.Effect<ReadonlyArray<UnsequencedEvent>>
  /**
   * Whether anyone may follow run `runId`'s events live now, here or in another process on the
   * store: ephemeral events nobody follows need not be made at all.
   */
  readonly followed: (runId: string) => boolean
  /** Publishes events already stored to live subscribers, in order. */
  readonly publish: (events: ReadonlyArray<FoundryEvent>) => Effect.Effect<void>
  /** A run's events: the stored ones, then live ones, ending with the event that ends the run (none for no such run). */
  readonly runEvents: (runId: string) => Stream.Stream<FoundryEvent, StoreError>
  /** `runEvents` as a follower, subscribed (and its stored events read) in the scope; `None` when there is no such run. */
  readonly followRun: (runId: string, after?: number) => Effect.Effect<Option.Option<RunFollower>, StoreError, Scope.Scope>
  /** Every event matching `filter` with `seq` after `after`, stored then live; never ends. */
  readonly follow: (filter: EventFilter, after: number) => Stream.Stream<FoundryEvent, StoreError>
}>() {}

/** How events are kept and pruned. */
export interface EventLogOptions {
  readonly retention?: { readonly maxAge?: Duration.DurationInput; readonly maxCount?: number } | undefined
  readonly pruneEvery?: Duration.DurationInput | undefined
  /** The release events are stamped with: the build that is running. */
  readonly release?: Effect.Effect<string> | undefined
  /**
   * Other processes may write events to the same store (a second server, `foundry run`, the
   * runners of a cluster): followers here get those too, read from the store this often while
   * anyone follows. Ephemeral events (text deltas) go to other processes' followers over the
   * store's channel (`liveRelay.ts`).
   */
  readonly crossProcess?: { readonly pollEvery: Duration.DurationInput } | undefined
}

/** How long the number of an event published here is remembered at least: the tail may have read it before it was published here. */
const rememberPublished = 2000

const pageSize = 1000


/** The event log over the event storage, with an in-process fan-out. */
export const layer = (options: EventLogOptions = {}) => Layer.scoped(
  EventLog,
  Effect.gen(function*() {
    const store = yield* Store
    const storage = yield* EventStorage
    const database = yield* Database
    const hub = yield* Effect.acquireRelease(PubSub.unbounded<FoundryEvent>(), PubSub.shutdown)
    const currentRelease = options.release ?? Effect.succeed("dev")
    let followers = 0
    // A run's followers (its SSE stream, `foundry run`) get its events in an inbox of their
    // own, so that an event is handed to the few that want it, not filtered by every stream.
    const runFollowers = new Map<string, Set<RunInbox>>()

    const stamp = (
      drafts: ReadonlyArray<EventDraft>,
      at?: { readonly time: number; readonly release: string }
    ): Effect.Effect<ReadonlyArray<FoundryEvent>> =>
      at === undefined
        ? Effect.zipWith(Clock.currentTimeMillis, currentRelease, (time, release) => stampDrafts(drafts, time, release))
        : Effect.sync(() => stampDrafts(drafts, at.time, at.release))

    // Cross-process: the sequence numbers published lately (and when), so that an event of this
    // process the tail reads is not handed to its run's followers a second time (forgotten by
    // `forgetOld`). `tailAt`: how far the tail has read the store.
    const seen = new Map<number, number>()
    let tailAt = 0
    // Where the tail starts when it wakes: the newest event after a while nobody followed.
    let tailFrom: "newest" | "where it is" = "newest"
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
    // Subscribers of the whole feed: with none, publishing is only the run followers' queues.
    let feedSubscribers = 0

    // The tail looks at once when woken here (else every `pollEvery`): by the first follower, and
    // by an event of this process the feed holds back.
    const lookNow = yield* Queue.sliding<void>(1)

    // At once, in the step that decides what goes: a later call cannot hand on higher numbers first.
    const toFeed = (events: ReadonlyArray<FoundryEvent>): void => {
      if (feedSubscribers === 0) return
      for (const event of events) {
        hub.unsafeOffer(event)
        if (relay !== undefined) arrivals.fed(event)
      }
    }
    const feedOrder = makeFeedOrder({
      subscribed: () => feedSubscribers > 0,
      deliver: toFeed,
      lookNow: () => Queue.unsafeOffer(lookNow, undefined)
    })
    /** Hands on what may go now of `stored`, read by the tail up to `readTo` (else published here): cross-process, in order. */
    const feedInOrder = (stored: ReadonlyArray<FoundryEvent>, readTo = 0): void =>
      options.crossProcess === undefined ? toFeed(stored) : feedOrder.inOrder(stored, readTo)

    /** Hands stored events to their runs' followers. */
    const toRunFollowers = (stored: ReadonlyArray<FoundryEvent>): void => {
      if (runFollowers.size === 0) return
      for (const event of stored) {
        const inboxes = runFollowers.get(event.runId)
        if (inboxes === undefined) continue
        for (const inbox of inboxes) inbox.put(event)
        if (relay !== undefined) arrivals.followed(event)
      }
      // Once every event is in: a follower takes what one publication brings in one take (an
      // inbox already woken has no taker waiting, and waking it again does nothing).
      for (const event of stored) {
        for (const inbox of runFollowers.get(event.runId) ?? []) inbox.wake()
      }
    }

    const publish = (stored: ReadonlyArray<FoundryEvent>) =>
      Effect.suspend(() => {
        let fresh = stored
        if (options.crossProcess !== undefined) {
          const now = Date.now()
          for (const event of stored) {
            if (event.seq === 0) continue
            // Handed to its run's followers already, ahead of a relayed event that came after it (`handOnRelayed`).
            if (seen.has(event.seq)) fresh = fresh.filter((other) => other !== event)
            seen.set(event.seq, now)
            if (event.seq > publishedUpTo) publishedUpTo = event.seq
          }
          forgetOld(now)
        }
        toRunFollowers(fresh)
        feedInOrder(stored)
        return Effect.void
      })

    // Cross-process, ephemeral events go to the other processes' followers too (`liveRelay.ts`):
    // `publishedUpTo` is where those made here come after; `arrivals` holds those of other
    // processes until the events before them have been handed on here.
    let relay: LiveRelay | undefined
    let publishedUpTo = 0
    // Events a look found that nobody here had published: handed to their runs' followers once a
    // poll interval has passed since if still not (an event of this process is published just
    // after its commit, so a look in between would otherwise publish it a second time; the tail
    // also looks at once when the feed holds an event back, so the next look may be the moment
    // after). (The feed takes what the tail reads at once: it hands on each number once, in order.)
    let unseen: Array<{ readonly event: FoundryEvent; readonly readAt: number }> = []
    const arrivals = relayArrivals({
      readTo: () => tailAt,
      wanted: (runId) => followers > 0 && (feedSubscribers > 0 || runFollowers.has(runId)),
      // The stored events of the run up to there that the tail read and holds back for a while go first.
      before: (runId, after) => {
        const before = unseen.filter((entry) => entry.event.runId === runId && entry.event.seq <= after && !seen.has(entry.event.seq))
        if (before.length === 0) return
        const taken = new Set(before)
        unseen = unseen.filter((entry) => !taken.has(entry))
        const now = Date.now()
        for (const entry of before) seen.set(entry.event.seq, now)
        toRunFollowers(before.map((entry) => entry.event))
      },
      toRunFollowers,
      toFeed,
      lookNow: () => Queue.unsafeOffer(lookNow, undefined)
    })

    /** Publishes ephemeral events made here, and sends them to other processes' followers. */
    const publishLive = (events: ReadonlyArray<FoundryEvent>) =>
      Effect.suspend(() => {
        if (relay !== undefined) {
          const wanted = events.filter((event) => relay?.wanted(event.runId) === true)
          if (wanted.length > 0) relay.send(wanted, publishedUpTo)
        }
        return publish(events)
      })

    /** An inbox of the run's live events, for as long as the scope is open. */
    const openInbox = (runId: string): Effect.Effect<RunInbox, never, Scope.Scope> =>
      heldInScope(
        () => {
          const inbox = makeRunInbox()
          const inboxes = runFollowers.get(runId) ?? new Set()
          // Followed here from now: the process executing it sends its text deltas from its next one.
          if (inboxes.size === 0) relay?.announce([runId], false)
          inboxes.add(inbox)
          runFollowers.set(runId, inboxes)
          return inbox
        },
        (inbox) => {
          const inboxes = runFollowers.get(runId)
          inboxes?.delete(inbox)
          if (inboxes?.size === 0) runFollowers.delete(runId)
          inbox.close()
        }
      )

    /**
     * Live events for `filter`, as the effect that takes those published since it last took (at
     * least one): a run's own inbox when it follows one run, else the whole feed.
     */
    const subscribe = (filter: EventFilter): Effect.Effect<Effect.Effect<Iterable<FoundryEvent>>, never, Scope.Scope> => {
      const runId = filter.runId
      if (runId === undefined) {
        return Effect.zipRight(
          heldInScope(() => {
            if (feedSubscribers++ === 0) relay?.announce([], true)
          }, () => feedSubscribers--),
          Effect.map(PubSub.subscribe(hub), (queue) => Queue.takeBetween(queue, 1, Number.POSITIVE_INFINITY))
        )
      }
      return Effect.map(openInbox(runId), (inbox) =>
        Effect.async<Iterable<FoundryEvent>>((resume) => {
          inbox.takeWith((taken) => resume(Effect.succeed(taken)))
          return Effect.sync(inbox.withdraw)
        }))
    }

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
          if (followers++ === 0) Queue.unsafeOffer(lookNow, undefined)
          return Scope.addFinalizer(scope, Effect.sync(() => followers--))
        }
        if (options.crossProcess === undefined || tailFrom === "where it is") return counted()
        return Effect.flatMap(
          restore(database.read({ sql: "SELECT COALESCE(MAX(seq), 0) AS seq FROM foundry_events", params: [] })),
          (rows) => {
            // Another follower that came at the same time may have started it already.
            if (tailFrom === "where it is") return counted()
            tailAt = Number(rows[0]?.seq ?? 0)
            tailFrom = "where it is"
            // What is stored up to here, the feed's followers read for themselves.
            feedInOrder([], tailAt)
            return counted()
          }
        )
      }))

    /** The stored events matching `filter` after `after`, page by page. */
    const storedAfter = (filter: EventFilter, after: number) =>
      Effect.gen(function*() {
        const stored: Array<FoundryEvent> = []
        let cursor = after
        while (true) {
          const page = yield* storage.list({ ...filter, after: cursor, limit: pageSize })
          stored.push(...page)
          const last = page[page.length - 1]
          if (last === undefined || page.length < pageSize) return stored
          cursor = last.seq
        }
      })

    // Written through the database's group commit: an emitter waits until its event is durable.
    const emit = (draft: EventDraft) =>
      Effect.gen(function*() {
        const [event] = yield* stamp([draft])
        if (event === undefined) return yield* Effect.dieMessage("stamping an event gave none")
        if (ephemeralTypes.has(draft.type)) {
          yield* publishLive([event])
          return event
        }
        const written = yield* database.write({ statements: [insertEvents([event])] })
        const stored = sequenced([event], written._tag === "Written" ? written.rows[0] ?? [] : [])
        yield* publish(stored)
        return stored[0] ?? event
      })

    const emitLive = (drafts: ReadonlyArray<EventDraft>) => Effect.flatMap(stamp(drafts), publishLive)

    /**
     * Stored events matching `filter` after `after`, then live ones: subscribed first, so none falls
     * between. One stage, as every follower of the feed pays it per chunk.
     */
    const follow = (filter: EventFilter, after: number): Stream.Stream<FoundryEvent, StoreError> =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const takeLive = yield* subscribe(filter)
        yield* following
        let stored: ReadonlyArray<FoundryEvent> | undefined = yield* storedAfter(filter, after)
        // A relayed event placed before what this follower read comes too late for it.
        if (relay !== undefined) for (const event of stored) arrivals.fed(event)
        const lastSeq = stored[stored.length - 1]?.seq ?? after
        const nextLive: Effect.Effect<Chunk.Chunk<FoundryEvent>> = Effect.flatMap(takeLive, (taken) => {
          const fresh: Array<FoundryEvent> = []
          for (const event of taken) {
            if (matchesFilter(filter, event) && (event.seq === 0 || event.seq > lastSeq)) fresh.push(event)
          }
          return fresh.length === 0 ? nextLive : Effect.succeed(Chunk.unsafeFromArray(fresh))
        })
        return Stream.repeatEffectChunk(Effect.suspend(() => {
          const first = stored
          stored = undefined
          return first !== undefined && first.length > 0 ? Effect.succeed(Chunk.unsafeFromArray(first)) : nextLive
        }))
      }))

    const followRun = (runId: string, after = 0): Effect.Effect<Option.Option<RunFollower>, StoreError, Scope.Scope> =>
      Effect.gen(function*() {
        const inbox = yield* openInbox(runId)
        yield* following
        // A run's end event is stored after all its others, and pruning takes the oldest events
        // first: a run with events stored but no end event among them has not ended, and its end
        // event will come to the inbox. Only a run with none stored is looked up (read before its
        // events again: one that ends after this read has its end event among them or in the inbox;
        // one that had ended had its end event pruned).
        let history = yield* storedAfter({ runId }, after)
        let ended = false
        if (history.length === 0) {
          const run = yield* store.getRun(runId)
          if (Option.isNone(run)) return Option.none()
          ended = finalStatuses.has(run.value.status)
          history = yield* storedAfter({ runId }, after)
        }
        const last = history[history.length - 1]
        if (relay !== undefined && last !== undefined) arrivals.followed(last)
        return Option.some(runFollower(inbox, history, after, ended))
      })

    const runEvents = (runId: string): Stream.Stream<FoundryEvent, StoreError> =>
      Stream.unwrapScoped(Effect.map(followRun(runId), Option.match({
        onNone: () => Stream.empty,
        onSome: (next) =>
          Stream.repeatEffectChunkOption(
            Effect.async<Chunk.Chunk<FoundryEvent>, Option.Option<never>>((resume) => {
              const takeBack = next((events) => resume(events === undefined ? Effect.fail(Option.none()) : Effect.succeed(Chunk.unsafeFromArray(events))))
              return Effect.sync(takeBack)
            })
          )
      })))

    // Retention: old events go by age and by count, checked on an interval.
    const retention = options.retention
    if (retention?.maxAge !== undefined || retention?.maxCount !== undefined) {
      yield* Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        yield* storage.prune({
          olderThan: retention.maxAge === undefined ? undefined : now - Duration.toMillis(Duration.decode(retention.maxAge)),
          keepLatest: retention.maxCount
        })
      }).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("event retention failed", cause)),
        Effect.repeat(Schedule.spaced(options.pruneEvery ?? "10 minutes")),
        Effect.forkScoped
      )
    }

    if (options.crossProcess !== undefined) {
      let announcedAt = 0
      const pollEvery = options.crossProcess.pollEvery
      const unseenFor = Duration.toMillis(Duration.decode(pollEvery))
      yield* Effect.gen(function*() {
        if (followers === 0) {
          tailFrom = "newest"
          unseen = []
          arrivals.clear()
          return yield* Queue.take(lookNow)
        }
        const now = Date.now()
        const due = unseen.findIndex(({ readAt }) => now - readAt < unseenFor)
        const ready = (due < 0 ? unseen : unseen.slice(0, due)).flatMap(({ event }) => seen.has(event.seq) ? [] : [event])
        unseen = due < 0 ? [] : unseen.slice(due)
        for (const event of ready) seen.set(event.seq, now)
        toRunFollowers(ready)
        // On from where the tail has read: events commit in the order of their numbers, so none
        // numbered lower commits later. Page after page until one is not full: a tail that reads
        // less than is written falls behind.
        let page: ReadonlyArray<FoundryEvent> = []
        do {
          page = yield* storage.list({ after: tailAt, limit: pageSize })
          const readAt = Date.now()
          for (const event of page) if (!seen.has(event.seq)) unseen.push({ event, readAt })
          const readTo = page[page.length - 1]?.seq ?? tailAt
          // Ephemeral events of other processes placed among these go in their places: the events
          // up to each place first, then those placed there, then the rest.
          for (const place of arrivals.placesUpTo(readTo)) {
            tailAt = Math.max(tailAt, place)
            feedInOrder(page.filter((event) => event.seq <= place), tailAt)
            arrivals.release()
          }
          tailAt = readTo
          feedInOrder(page, tailAt)
        } while (page.length === pageSize)
        arrivals.release()
        forgetOld(now)
        // While anyone follows here, the other processes hear which runs, now and then.
        if (relay !== undefined && now - announcedAt >= announceEvery) {
          announcedAt = now
          relay.announce(runFollowers.keys(), feedSubscribers > 0)
        }
        yield* Effect.timeout(Queue.take(lookNow), pollEvery).pipe(Effect.ignore)
      }).pipe(
        Effect.catchAllCause((cause) => Effect.zipRight(Effect.logWarning("reading other processes' events failed", cause), Effect.sleep(pollEvery))),
        Effect.forever,
        Effect.forkScoped
      )
    }

    // Last: what it hands on needs everything above.
    if (options.crossProcess !== undefined && database.channel !== undefined) relay = yield* makeLiveRelay(database.channel, arrivals)

    return EventLog.of({
      emit,
      emitLive,
      stamp,
      followed: (runId) => followers > 0 || relay?.wanted(runId) === true,
      publish,
      runEvents,
      followRun,
      follow
    })
  })
)

