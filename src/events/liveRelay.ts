/**
 * Ephemeral events (text deltas) between the processes on one store. They are never stored, so a
 * follower in one process got none of a run another process executes: a client streaming through
 * a load balancer, or through a cluster's other runner, had each turn's text at once at its end.
 *
 * Over the store's channel (PostgreSQL's `LISTEN`/`NOTIFY`): a process where someone follows runs
 * says which, now and then (or that it follows them all: the events feed); a process that makes
 * ephemeral events of a run followed elsewhere sends them, each with the number of the last event
 * it had published before it, so that the receiver hands it on after the stored events that came
 * before it (a delta of turn 2 after the event that starts turn 2, which the receiver reads from
 * the store a moment later than the delta comes).
 */
import { Effect, Runtime, Schedule, Schema, type Scope, Stream } from "effect"
import type { StoreChannel } from "../durable/Database.js"
import { newId } from "../durable/ids.js"
import { FoundryEvent } from "./FoundryEvent.js"

/** An ephemeral event from another process, to hand on once the events numbered up to `after` have been. */
export interface RelayedEvent {
  readonly after: number
  readonly event: FoundryEvent
}

/** What a process tells the others. */
const Message = Schema.parseJson(Schema.Union(
  Schema.Struct({ kind: Schema.Literal("following"), from: Schema.String, runs: Schema.Array(Schema.String), all: Schema.Boolean }),
  Schema.Struct({ kind: Schema.Literal("events"), from: Schema.String, items: Schema.Array(Schema.Struct({ after: Schema.Number, event: FoundryEvent })) })
))
type Message = typeof Message.Type

/** The relay of one process. */
export interface LiveRelay {
  /** Whether another process follows run `runId` (or every run) now: its ephemeral events are worth sending. */
  readonly wanted: (runId: string) => boolean
  /** Sends ephemeral events made here, each after the events this process had published up to `after`. */
  readonly send: (events: ReadonlyArray<FoundryEvent>, after: number) => void
  /** Tells the other processes which runs are followed here (`all`: every run, the events feed). */
  readonly announce: (runs: Iterable<string>, all: boolean) => void
}

/** The channel the processes on a store talk on. */
const channelName = "foundry_live"

/** How long a process's word that it follows holds: it says it again every `announceEvery` while it does. */
const heardFor = 3000
export const announceEvery = 1000

/**
 * The relay over `channel`, for as long as the scope is open: `received` gets the ephemeral events
 * other processes send, in the order they were sent.
 */
export const makeLiveRelay = (
  channel: StoreChannel,
  received: (events: ReadonlyArray<RelayedEvent>) => void
): Effect.Effect<LiveRelay, never, Scope.Scope> =>
  Effect.gen(function*() {
    const self = newId("proc")
    // Who follows what elsewhere, until when.
    const remoteRuns = new Map<string, number>()
    let remoteAllUntil = 0

    const heard = (message: Message) => {
      if (message.from === self) return
      if (message.kind === "events") return received(message.items)
      const now = Date.now()
      for (const [runId, until] of remoteRuns) if (until <= now) remoteRuns.delete(runId)
      if (message.all) remoteAllUntil = now + heardFor
      for (const runId of message.runs) remoteRuns.set(runId, now + heardFor)
    }
    yield* channel.listen(channelName).pipe(
      Stream.runForEach((text) => Effect.sync(() => {
        // A message this version cannot read (another version's, in a rolling upgrade) is passed by.
        const decoded = Schema.decodeUnknownOption(Message)(text)
        if (decoded._tag === "Some") heard(decoded.value)
      })),
      Effect.catchAllCause((cause) => Effect.logWarning("listening to the other processes on the store failed", cause)),
      Effect.repeat(Schedule.spaced("1 second")),
      Effect.forkScoped
    )

    // Sent in order by one fiber, as many to a message as fit: what comes while one is sent goes in the next.
    const outbox: Array<string> = []
    let sending = false
    const sendAll: Effect.Effect<void> = Effect.suspend(() => {
      const texts = outbox.splice(0)
      if (texts.length === 0) {
        sending = false
        return Effect.void
      }
      return Effect.zipRight(
        Effect.forEach(pack(texts, channel.maxMessageBytes), (message) => channel.send(channelName, message), { discard: true }).pipe(
          Effect.catchAllCause((cause) => Effect.logDebug("sending live events to the other processes failed", cause))
        ),
        sendAll
      )
    })
    const fork = Runtime.runFork(yield* Effect.runtime<never>())
    const post = (text: string) => {
      outbox.push(text)
      if (sending) return
      sending = true
      fork(sendAll)
    }
    const envelope = (items: ReadonlyArray<string>) => `{"kind":"events","from":${JSON.stringify(self)},"items":[${items.join(",")}]}`

    /** The items as messages, each under `maxBytes`; an item too long for a message alone is left out (its turn's text is stored). */
    const pack = (items: ReadonlyArray<string>, maxBytes: number): ReadonlyArray<string> => {
      const messages: Array<string> = []
      let current: Array<string> = []
      let bytes = Buffer.byteLength(envelope([]))
      for (const item of items) {
        const size = Buffer.byteLength(item) + 1
        if (current.length > 0 && bytes + size > maxBytes) {
          messages.push(envelope(current))
          current = []
          bytes = Buffer.byteLength(envelope([]))
        }
        if (bytes + size > maxBytes) continue
        current.push(item)
        bytes += size
      }
      if (current.length > 0) messages.push(envelope(current))
      return messages
    }

    return {
      wanted: (runId) => {
        if (remoteAllUntil === 0 && remoteRuns.size === 0) return false
        const now = Date.now()
        return remoteAllUntil > now || (remoteRuns.get(runId) ?? 0) > now
      },
      send: (events, after) => {
        for (const event of events) post(JSON.stringify({ after, event }))
      },
      announce: (runs, all) => {
        const listed = [...runs]
        const message = JSON.stringify({ kind: "following", from: self, runs: listed, all })
        // Too many runs to name in one message: all of them, then.
        fork(
          channel.send(channelName, Buffer.byteLength(message) <= channel.maxMessageBytes ? message : JSON.stringify({ kind: "following", from: self, runs: [], all: true })).pipe(
            Effect.catchAllCause((cause) => Effect.logDebug("telling the other processes what is followed here failed", cause))
          )
        )
      }
    }
  })

/**
 * The runs of the events handed on lately, by number: whether one of a run numbered after a
 * relayed event's place has gone already.
 */
const recentlyHandedOn = (size = 1024) => {
  const seqs = new Float64Array(size)
  const runs = new Array<string>(size)
  let next = 0
  let count = 0
  return {
    note: (event: FoundryEvent): void => {
      if (event.seq === 0) return
      seqs[next] = event.seq
      runs[next] = event.runId
      next = (next + 1) % size
      if (count < size) count++
    },
    /** Whether an event of `runId` numbered after `after` has been handed on, as far as this remembers (too far back: yes). */
    passed: (runId: string, after: number): boolean => {
      let oldest = Number.POSITIVE_INFINITY
      for (let i = 0; i < count; i++) {
        const seq = seqs[i]!
        if (seq > after && runs[i] === runId) return true
        if (seq < oldest) oldest = seq
      }
      return count === size && oldest > after + 1
    }
  }
}

/** Where the ephemeral events of other processes go, and what their place is read against. */
export interface ArrivalsPlace {
  /** How far the events stored are read here: a relayed event waits until its place is. */
  readonly readTo: () => number
  /** Whether the events of run `runId` are followed here. */
  readonly wanted: (runId: string) => boolean
  /** Hands on the stored events of run `runId` up to `after` that are read but not handed on yet. */
  readonly before: (runId: string, after: number) => void
  readonly toRunFollowers: (events: ReadonlyArray<FoundryEvent>) => void
  readonly toFeed: (events: ReadonlyArray<FoundryEvent>) => void
  /** Asks for the store to be read now: an event waits for its place. */
  readonly lookNow: () => void
}

/**
 * The ephemeral events other processes send, each handed on at its place, in the order they
 * came: to a run's followers after the stored events of its run up to its place, and to the feed,
 * which has had every event up to there. One that comes too late (an event of its run numbered
 * after its place handed on already: a delta after its turn's end would add its text twice) is
 * dropped; its turn's text is stored.
 */
export const relayArrivals = (place: ArrivalsPlace) => {
  let held: Array<RelayedEvent> = []
  const followedLately = recentlyHandedOn()
  const fedLately = recentlyHandedOn()
  const release = (): void => {
    let taken = 0
    while (taken < held.length && held[taken]!.after <= place.readTo()) taken++
    if (taken === 0) return
    const ready = held.slice(0, taken)
    held = held.slice(taken)
    for (const { after, event } of ready) {
      place.before(event.runId, after)
      if (!followedLately.passed(event.runId, after)) place.toRunFollowers([event])
      if (!fedLately.passed(event.runId, after)) place.toFeed([event])
    }
  }
  return {
    /** A stored event handed to its run's followers. */
    followed: followedLately.note,
    /** A stored event handed to the feed. */
    fed: fedLately.note,
    arrived: (items: ReadonlyArray<RelayedEvent>): void => {
      for (const item of items) if (place.wanted(item.event.runId)) held.push(item)
      release()
      if (held.length > 0) place.lookNow()
    },
    /** Hands on those whose place has been read. */
    release,
    /** Nobody follows here any more. */
    clear: () => {
      held = []
    }
  }
}
