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
import { type EventFilter, EventStorage, insertEvents, sequenced, type UnsequencedEvent } from "./EventStorage.js"
import { type AnyEvent, ephemeralTypes, type FoundryEvent, runEndTypes, withEnvelope } from "./FoundryEvent.js"
import { makeRunInbox, type RunInbox } from "./runInbox.js"

/** An event before the log gives it an id, a time, a release and a sequence number (any type, its `data` that type's). */
export type EventDraft = AnyEvent<"id" | "seq" | "time" | "release">

/**
 * The drafts as events of `release` at `time`, each with an id of its own, numbered 0: as an
 * ephemeral event is published, until the store numbers a stored one.
 */
const stampDrafts = (drafts: ReadonlyArray<EventDraft>, time: number, release: string): ReadonlyArray<FoundryEvent> =>
  drafts.map((draft) => withEnvelope(draft, { id: newId("evt"), time, release, seq: 0 }))

/**
 * A run's events as they are followed: each call hands the next ones to `deliver`, now or once
 * they are published; `undefined` once the run has ended. The stored events come first, then the
 * live ones, up to the event that ends the run. A callback rather than an effect, for a writer that
 * forwards them without a fiber of its own (an SSE response); one call at a time. It returns what
 * takes the call back while it waits (`deliver` is then not called).
 */
export type RunFollower = (deliver: (events: ReadonlyArray<FoundryEvent> | undefined) => void) => () => void

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
  /** Whether anyone follows events live now: ephemeral events nobody follows need not be made at all. */
  readonly followed: () => boolean
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
   * anyone follows. Ephemeral events (text deltas) stay in the process that made them.
   */
  readonly crossProcess?: { readonly pollEvery: Duration.DurationInput } | undefined
}

/** How long the number of an event published here is remembered at least: the tail may have read it before it was published here. */
const rememberPublished = 2000

const pageSize = 1000

/** Whether a live event matches a filter (the same fields the store filters on). */
const matches = (filter: EventFilter, event: FoundryEvent): boolean =>
  (filter.runId === undefined || event.runId === filter.runId) &&
  (filter.conversationId === undefined || event.conversationId === filter.conversationId) &&
  (filter.instanceId === undefined || event.instanceId === filter.instanceId) &&
  (filter.agent === undefined || event.agent === filter.agent) &&
  (filter.type === undefined || event.type === filter.type) &&
  (filter.since === undefined || event.time >= filter.since)

const isRunEnd = (event: FoundryEvent): boolean => runEndTypes.has(event.type)

/**
 * `acquire` now, `release` when the scope closes: `Effect.acquireRelease` for synchronous work,
 * without the copy of the fiber's references its release makes (a context diff per finalizer, on
 * every followed run's path).
 */
const heldInScope = <A>(acquire: () => A, release: (a: A) => void): Effect.Effect<A, never, Scope.Scope> =>
  Effect.uninterruptible(Effect.flatMap(Effect.scope, (scope) => {
    const a = acquire()
    return Effect.as(Scope.addFinalizer(scope, Effect.sync(() => release(a))), a)
  }))

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

    // Cross-process, the feed hands events on in the order of their numbers, so that a client that
    // resumes after the last number it got (`Last-Event-ID`) misses none: an event of this process
    // numbered after one of another process that the tail has not read yet waits in `feedHeld`,
    // and the tail looks at once. Every event numbered up to `feedAt` has been handed on (or was
    // stored before the feed's followers read what is stored). Events commit in the order of their
    // numbers (on SQLite one writer numbers them as it writes; on PostgreSQL a lock orders them), so
    // what the tail reads up to a number is every event up to it, and a number it does not find
    // there never comes.
    let feedAt = 0
    const feedHeld = new Map<number, FoundryEvent>()
    // At once, in the step that decides what goes: a later call cannot hand on higher numbers first.
    const toFeed = (events: ReadonlyArray<FoundryEvent>): void => {
      if (feedSubscribers > 0) for (const event of events) hub.unsafeOffer(event)
    }
    /** Hands on what may go now of `stored`, read by the tail up to `readTo` (else published here). */
    const feedInOrder = (stored: ReadonlyArray<FoundryEvent>, readTo = 0): void => {
      if (options.crossProcess === undefined) return toFeed(stored)
      if (feedSubscribers === 0) {
        // Nobody to hand them to (one who comes reads what is stored first): on the run's path, no more than this.
        for (const event of stored) if (event.seq > feedAt) feedAt = event.seq
        if (readTo > feedAt) feedAt = readTo
        if (feedHeld.size > 0) feedHeld.clear()
        return
      }
      const ready: Array<FoundryEvent> = []
      for (const event of stored) {
        if (event.seq === 0) ready.push(event)
        else if (event.seq > feedAt) feedHeld.set(event.seq, event)
      }
      if (readTo > feedAt) {
        // Every event up to `readTo` is among those read: the held ones up to there go, gaps and all.
        const read = [...feedHeld.values()].filter((event) => event.seq <= readTo).sort((a, b) => a.seq - b.seq)
        for (const event of read) {
          ready.push(event)
          feedHeld.delete(event.seq)
        }
        feedAt = readTo
      }
      for (let next = feedHeld.get(feedAt + 1); next !== undefined; next = feedHeld.get(feedAt + 1)) {
        ready.push(next)
        feedHeld.delete(next.seq)
        feedAt = next.seq
      }
      if (feedHeld.size > 0) Queue.unsafeOffer(lookNow, undefined)
      return toFeed(ready)
    }

    /** Hands stored events to their runs' followers. */
    const toRunFollowers = (stored: ReadonlyArray<FoundryEvent>): void => {
      if (runFollowers.size === 0) return
      for (const event of stored) {
        for (const inbox of runFollowers.get(event.runId) ?? []) inbox.put(event)
      }
      // Once every event is in: a follower takes what one publication brings in one take (an
      // inbox already woken has no taker waiting, and waking it again does nothing).
      for (const event of stored) {
        for (const inbox of runFollowers.get(event.runId) ?? []) inbox.wake()
      }
    }

    const publish = (stored: ReadonlyArray<FoundryEvent>) =>
      Effect.suspend(() => {
        if (options.crossProcess !== undefined) {
          const now = Date.now()
          for (const event of stored) if (event.seq > 0) seen.set(event.seq, now)
          forgetOld(now)
        }
        toRunFollowers(stored)
        feedInOrder(stored)
        return Effect.void
      })

    /** An inbox of the run's live events, for as long as the scope is open. */
    const openInbox = (runId: string): Effect.Effect<RunInbox, never, Scope.Scope> =>
      heldInScope(
        () => {
          const inbox = makeRunInbox()
          const inboxes = runFollowers.get(runId) ?? new Set()
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
          heldInScope(() => feedSubscribers++, () => feedSubscribers--),
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
          yield* publish([event])
          return event
        }
        const written = yield* database.write({ statements: [insertEvents([event])] })
        const stored = sequenced([event], written._tag === "Written" ? written.rows[0] ?? [] : [])
        yield* publish(stored)
        return stored[0] ?? event
      })

    const emitLive = (drafts: ReadonlyArray<EventDraft>) => Effect.flatMap(stamp(drafts), publish)

    /**
     * Stored events matching `filter` after `after`, then live ones: subscribed first, so none falls
     * between. One stage, as every follower of the feed pays it per chunk.
     */
    const follow = (filter: EventFilter, after: number): Stream.Stream<FoundryEvent, StoreError> =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const takeLive = yield* subscribe(filter)
        yield* following
        let stored: ReadonlyArray<FoundryEvent> | undefined = yield* storedAfter(filter, after)
        const lastSeq = stored[stored.length - 1]?.seq ?? after
        const nextLive: Effect.Effect<Chunk.Chunk<FoundryEvent>> = Effect.flatMap(takeLive, (taken) => {
          const fresh: Array<FoundryEvent> = []
          for (const event of taken) {
            if (matches(filter, event) && (event.seq === 0 || event.seq > lastSeq)) fresh.push(event)
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
        return Option.some(follower)
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
      // Events a look found that nobody here had published: published once a poll interval has
      // passed since if still not (an event of this process is published just after its commit, so
      // a look in between would otherwise publish it a second time; the tail also looks at once
      // when the feed holds an event back, so the next look may be the moment after).
      // (The feed takes what the tail reads at once: it hands on each number once, in order.)
      let unseen: Array<{ readonly event: FoundryEvent; readonly readAt: number }> = []
      const pollEvery = options.crossProcess.pollEvery
      const unseenFor = Duration.toMillis(Duration.decode(pollEvery))
      yield* Effect.gen(function*() {
        if (followers === 0) {
          tailFrom = "newest"
          unseen = []
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
          tailAt = page[page.length - 1]?.seq ?? tailAt
          feedInOrder(page, tailAt)
        } while (page.length === pageSize)
        forgetOld(now)
        yield* Effect.timeout(Queue.take(lookNow), pollEvery).pipe(Effect.ignore)
      }).pipe(
        Effect.catchAllCause((cause) => Effect.zipRight(Effect.logWarning("reading other processes' events failed", cause), Effect.sleep(pollEvery))),
        Effect.forever,
        Effect.forkScoped
      )
    }

    return EventLog.of({ emit, emitLive, stamp, followed: () => followers > 0, publish, runEvents, followRun, follow })
  })
)

