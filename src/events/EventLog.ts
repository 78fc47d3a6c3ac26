/**
 * The event log: every step is an event, stored durably (text deltas excepted) and fanned out
 * live, so an SSE client can replay a run's history and then follow it as it happens.
 */
import { Cause, Chunk, Clock, Context, Duration, Effect, Exit, Layer, Option, Runtime, Scope, Stream } from "effect"
import { Database } from "../durable/Database.js"
import { finalStatuses } from "../durable/records.js"
import { Store } from "../durable/Store.js"
import type { StoreError } from "../durable/StoreError.js"
import { type EventFilter, EventStorage, insertEvents, matchesFilter, sequenced, type UnsequencedEvent } from "./EventStorage.js"
import { heldInScope } from "./heldInScope.js"
import { type AnyEvent, ephemeralTypes, type FoundryEvent } from "./FoundryEvent.js"
import { makeEventWriter } from "./eventWriter.js"
import { makeFeedOrder } from "./feedOrder.js"
import { announceEvery, type Followed, type LiveRelay, makeLiveRelay } from "./liveRelay.js"
import { type EventInbox, makeEventInbox } from "./eventInbox.js"
import { makeStoreTail, type StoreTail } from "./storeTail.js"
import { feedStream } from "./feedStream.js"
import { pruneOnSchedule, type RetentionOptions } from "./eventRetention.js"
import { type ReadPage, type RunFollower, runFollower } from "./runFollower.js"

export type { RunFollower } from "./runFollower.js"

/** An event before the log gives it an id, a time, a release and a sequence number (any type, its `data` that type's). */
export type EventDraft = AnyEvent<"id" | "seq" | "time" | "release">

/** Every run's text deltas, as a feed follower takes them (no conversation's id is a symbol). */
const all = Symbol("every run")

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
   * Whether anyone may follow the run's ephemeral events live now (as the run's, its
   * conversation's, or every run's), here or in another process on the store: ephemeral events
   * nobody follows need not be made at all.
   */
  readonly followed: (run: { readonly id: string; readonly conversationId: string }) => boolean
  /** Publishes events already stored to live subscribers, in order. */
  readonly publish: (events: ReadonlyArray<FoundryEvent>) => Effect.Effect<void>
  /** A run's events: the stored ones, then live ones, ending with the event that ends the run (none for no such run). */
  readonly runEvents: (runId: string) => Stream.Stream<FoundryEvent, StoreError>
  /** `runEvents` as a follower, subscribed (and its stored events read) in the scope; `None` when there is no such run. */
  readonly followRun: (runId: string, after?: number) => Effect.Effect<Option.Option<RunFollower>, StoreError, Scope.Scope>
  /** Every event matching `filter` with `seq` after `after`, stored then live; never ends. */
  readonly follow: (filter: EventFilter, after: number) => Stream.Stream<FoundryEvent, StoreError>
  /** Whether this log wrote `event`, not another process on the store (its id says so, however read: `eventWriter.ts`). */
  readonly wroteHere: (event: FoundryEvent) => boolean
}>() {}

/** How events are kept and pruned. */
export interface EventLogOptions extends RetentionOptions {
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

const pageSize = 1000

/** The event log over the event storage, with an in-process fan-out. */
export const layer = (options: EventLogOptions = {}) => Layer.scoped(
  EventLog,
  Effect.gen(function*() {
    const store = yield* Store
    const storage = yield* EventStorage
    const database = yield* Database
    const currentRelease = options.release ?? Effect.succeed("dev")
    const runtime = yield* Effect.runtime<never>()
    const writer = makeEventWriter()
    // A run's followers (its SSE stream, `foundry run`) get its events in an inbox of their
    // own, so that an event is handed to the few that want it, not filtered by every stream.
    const runFollowers = new Map<string, Set<EventInbox>>()
    // The feed's followers, each with its filter: an inbox holds only what its follower takes.
    const feedFollowers = new Set<{ readonly filter: EventFilter; readonly inbox: EventInbox }>()

    const stamp = (
      drafts: ReadonlyArray<EventDraft>,
      at?: { readonly time: number; readonly release: string }
    ): Effect.Effect<ReadonlyArray<FoundryEvent>> =>
      at === undefined
        ? Effect.zipWith(Clock.currentTimeMillis, currentRelease, (time, release) => writer.stamp(drafts, time, release))
        : Effect.sync(() => writer.stamp(drafts, at.time, at.release))

    // Cross-process: what other processes write, read while anyone follows (`storeTail.ts`); the
    // ephemeral events they send come over the store's channel (`liveRelay.ts`).
    let tail: StoreTail | undefined
    let relay: LiveRelay | undefined
    // With no feed follower (`feedFollowers`), publishing is only the run followers' inboxes. Of
    // the feed's, the ones that take text deltas, of every run or (by conversation) of a conversation's
    // runs: a run's deltas nobody wants are neither made here nor sent from other processes.
    let deltaSubscribers = 0
    const conversationDeltas = new Map<string, number>()
    /** What is followed here, as the other processes hear it. */
    const followedHere = (): Followed => ({ runs: runFollowers.keys(), conversations: conversationDeltas.keys(), all: deltaSubscribers > 0 })
    /** Whether the text deltas of run `runId` of conversation `conversationId` are wanted here: by its followers, or by the feed's. */
    const wantsDeltas = (runId: string, conversationId: string): boolean =>
      deltaSubscribers > 0 || runFollowers.has(runId) || conversationDeltas.has(conversationId)

    // At once, in the step that decides what goes: a later call cannot hand on higher numbers first.
    const toFeed = (events: ReadonlyArray<FoundryEvent>): void => {
      if (feedFollowers.size === 0) return
      for (const event of events) {
        if (deltaSubscribers === 0 && ephemeralTypes.has(event.type) && !conversationDeltas.has(event.conversationId)) continue
        for (const follower of feedFollowers) if (matchesFilter(follower.filter, event)) follower.inbox.put(event)
        if (relay !== undefined) tail?.arrivals.fed(event)
      }
      for (const follower of feedFollowers) follower.inbox.wake()
    }
    const feedOrder = makeFeedOrder({
      subscribed: () => feedFollowers.size > 0,
      deliver: toFeed,
      lookNow: () => tail?.lookNow()
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
        if (relay !== undefined) tail?.arrivals.followed(event)
      }
      // Once every event is in: a follower takes what one publication brings in one take (an
      // inbox already woken has no taker waiting, and waking it again does nothing).
      for (const event of stored) {
        for (const inbox of runFollowers.get(event.runId) ?? []) inbox.wake()
      }
    }

    const publish = (stored: ReadonlyArray<FoundryEvent>) =>
      Effect.suspend(() => {
        toRunFollowers(tail === undefined ? stored : tail.published(stored))
        feedInOrder(stored)
        return Effect.void
      })

    /** Publishes ephemeral events made here, and sends them to other processes' followers. */
    const publishLive = (events: ReadonlyArray<FoundryEvent>) =>
      Effect.suspend(() => {
        if (relay !== undefined) {
          const wanted = events.filter((event) => relay?.wanted(event.runId, event.conversationId) === true)
          if (wanted.length > 0) relay.send(wanted, tail?.publishedUpTo() ?? 0)
        }
        return publish(events)
      })

    /** An inbox of the run's live events, for as long as the scope is open. */
    const openInbox = (runId: string): Effect.Effect<EventInbox, never, Scope.Scope> =>
      heldInScope(
        () => {
          const inbox = makeEventInbox()
          const inboxes = runFollowers.get(runId) ?? new Set()
          // Followed here from now: the process executing it sends its text deltas from its next one.
          if (inboxes.size === 0) relay?.announce({ runs: [runId], conversations: [], all: false })
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
     * An inbox of the live events for `filter`, for as long as the scope is open: a run's own when
     * it follows one run, else one of the feed's.
     */
    const subscribe = (filter: EventFilter): Effect.Effect<EventInbox, never, Scope.Scope> => {
      const runId = filter.runId
      if (runId !== undefined) return openInbox(runId)
      // The conversation whose deltas it takes (all: every run's); none for a follower of one other type.
      const deltasOf = filter.deltas === false || (filter.type !== undefined && ![...ephemeralTypes].some((type) => type === filter.type)) ||
          (filter.deltasOf !== undefined && filter.conversationId !== undefined && filter.deltasOf !== filter.conversationId)
        ? undefined
        : filter.deltasOf ?? filter.conversationId ?? all
      return Effect.map(
        heldInScope(() => {
          const follower = { filter, inbox: makeEventInbox() }
          feedFollowers.add(follower)
          if (deltasOf === all) {
            if (deltaSubscribers++ === 0) relay?.announce({ runs: [], conversations: [], all: true })
          } else if (deltasOf !== undefined) {
            const others = conversationDeltas.get(deltasOf) ?? 0
            conversationDeltas.set(deltasOf, others + 1)
            if (others === 0) relay?.announce({ runs: [], conversations: [deltasOf], all: false })
          }
          return follower
        }, (follower) => {
          feedFollowers.delete(follower)
          follower.inbox.close()
          if (deltasOf === all) {
            deltaSubscribers--
          } else if (deltasOf !== undefined) {
            const left = (conversationDeltas.get(deltasOf) ?? 1) - 1
            if (left === 0) conversationDeltas.delete(deltasOf)
            else conversationDeltas.set(deltasOf, left)
          }
        }),
        (follower) => follower.inbox
      )
    }

    /** Cross-process, counts a follower for as long as the scope is open, and starts the tail. */
    const following: Effect.Effect<void, StoreError, Scope.Scope> = Effect.suspend(() =>
      tail?.following ?? Effect.void
    )

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

    const follow = (filter: EventFilter, after: number) =>
      feedStream({
        subscribe,
        following,
        list: storage.list,
        pageSize,
        // A relayed event placed before what this follower read comes too late for it.
        read: (page) => {
          if (relay !== undefined) for (const event of page) tail?.arrivals.fed(event)
        }
      }, filter, after)

    /** A relayed event placed before what a run's follower read comes too late for it. */
    const readByRunFollower = (page: ReadonlyArray<FoundryEvent>): void => {
      const last = page[page.length - 1]
      if (relay !== undefined && last !== undefined) tail?.arrivals.followed(last)
    }

    /** A run's stored events after `after`, a page of them. */
    const runPage = (runId: string, after: number) =>
      Effect.tap(storage.list({ runId, after, limit: pageSize }), (page) => Effect.sync(() => readByRunFollower(page)))

    /** A run's stored events page by page, after the first or for a follower that fell behind: a fiber only then. */
    const readPageOf = (runId: string): ReadPage => (after, done) =>
      Runtime.runCallback(runtime)(runPage(runId, after), {
        onExit: Exit.match({
          onSuccess: done,
          // Interrupted: taken back, and not called.
          onFailure: (cause) => Cause.isInterruptedOnly(cause) ? undefined : done(undefined)
        })
      })

    const followRun = (runId: string, after = 0): Effect.Effect<Option.Option<RunFollower>, StoreError, Scope.Scope> =>
      Effect.gen(function*() {
        const inbox = yield* openInbox(runId)
        yield* following
        // A run's end event is stored after all its others, and pruning takes the oldest events
        // first: a run with events stored but no end event among them has not ended, and its end
        // event will come to the inbox. Only a run with none stored is looked up (read before its
        // events again: one that ends after this read has its end event among them or in the inbox;
        // one that had ended had its end event pruned). The first page only: the follower reads the
        // rest as it is taken, so a long run's history is never held whole.
        let firstPage = yield* runPage(runId, after)
        let ended = false
        if (firstPage.length === 0) {
          const run = yield* store.getRun(runId)
          if (Option.isNone(run)) return Option.none()
          ended = finalStatuses.has(run.value.status)
          firstPage = yield* runPage(runId, after)
        }
        return Option.some(runFollower(inbox, firstPage, after, ended, readPageOf(runId), pageSize))
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

    yield* pruneOnSchedule(storage, options)

    if (options.crossProcess !== undefined) {
      let announcedAt = 0
      tail = yield* makeStoreTail({
        storage,
        pollEvery: options.crossProcess.pollEvery,
        outlet: {
          toRunFollowers,
          toFeed,
          feedInOrder,
          wanted: (runId) => (tail?.followers() ?? 0) > 0 && (feedFollowers.size > 0 || runFollowers.has(runId)),
          wantedLive: wantsDeltas,
          // While anyone follows here, the other processes hear which runs, now and then.
          looked: (now) => {
            if (relay === undefined || now - announcedAt < announceEvery) return
            announcedAt = now
            relay.announce(followedHere())
          }
        }
      })
    }

    // Last: what it hands on needs everything above.
    if (tail !== undefined && database.channel !== undefined) relay = yield* makeLiveRelay(database.channel, tail.arrivals, followedHere)

    return EventLog.of({
      emit,
      emitLive,
      stamp,
      followed: (run) => wantsDeltas(run.id, run.conversationId) || relay?.wanted(run.id, run.conversationId) === true,
      publish,
      runEvents,
      followRun,
      follow,
      wroteHere: writer.wrote
    })
  })
)

