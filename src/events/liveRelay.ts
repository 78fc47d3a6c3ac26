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
 *
 * A process says it is there as it starts and every few seconds; one that hears of no other
 * process keeps what it follows to itself (nobody would hear it), and says it all at once to a
 * process it hears of for the first time.
 */
import { Chunk, Duration, Effect, Queue, Schedule, Schema, type Scope, Stream } from "effect"
import type { StoreChannel } from "../durable/Database.js"
import { newId } from "../durable/ids.js"
import { StoreError } from "../durable/StoreError.js"
import { FoundryEvent } from "./FoundryEvent.js"

/** An ephemeral event from another process, to hand on once the events numbered up to `after` have been. */
export interface RelayedEvent {
  readonly after: number
  readonly event: FoundryEvent
}

// What a process tells the others, read in two steps: who sent it and what kind it is first, so
// that a process decodes only the events it wants.
// `answer`: it has not heard the others yet, and asks them to say what they follow.
const Envelope = Schema.Struct({ kind: Schema.Literal("following", "events"), from: Schema.String, answer: Schema.optional(Schema.Boolean) })
// `conversations` is absent from the word of a process of an earlier version.
const Following = Schema.Struct({ runs: Schema.Array(Schema.String), conversations: Schema.optional(Schema.Array(Schema.String)), all: Schema.Boolean })
const Relayed = Schema.Struct({ after: Schema.Number, event: FoundryEvent })
const Items = Schema.Struct({ items: Schema.Array(Schema.Unknown) })
const OfRun = Schema.Struct({ event: Schema.Struct({ runId: Schema.String, conversationId: Schema.String }) })
const envelopeOf = Schema.decodeUnknownOption(Envelope)
const followingOf = Schema.decodeUnknownOption(Following)
const relayedOf = Schema.decodeUnknownOption(Relayed)
const itemsOf = Schema.decodeUnknownOption(Items)
const runOf = Schema.decodeUnknownOption(OfRun)

/** What is followed in a process: runs, the runs of conversations, or (`all`) every run. */
export interface Followed {
  readonly runs: Iterable<string>
  readonly conversations: Iterable<string>
  readonly all: boolean
}

/** The relay of one process. */
export interface LiveRelay {
  /** Whether another process follows run `runId` of conversation `conversationId` (or every run) now: its ephemeral events are worth sending. */
  readonly wanted: (runId: string, conversationId: string) => boolean
  /** Sends ephemeral events made here, each after the events this process had published up to `after`. */
  readonly send: (events: ReadonlyArray<FoundryEvent>, after: number) => void
  /** Tells the other processes what is followed here. */
  readonly announce: (followed: Followed) => void
}

/** Where the relay hands what it hears. */
export interface RelayReceiver {
  /** Whether run `runId`'s events (of conversation `conversationId`) are followed here: only those are read. */
  readonly wanted: (runId: string, conversationId: string) => boolean
  /** The ephemeral events of followed runs another process sent, in the order it sent them. */
  readonly arrived: (events: ReadonlyArray<RelayedEvent>) => void
}

/** The channel the processes on a store talk on. */
const channelName = "foundry_live"

/** How long a process's word that it follows holds: it says it again every `announceEvery` while it does. */
const heardFor = 3000
export const announceEvery = 1000

/**
 * Every process says it is there this often. A process not heard for `deafAfter` is taken for
 * gone; on a channel that may go deaf (`StoreChannel.mayGoDeaf`), where a process hears itself, a
 * listening connection that hears nothing for as long is taken for cut and opened again.
 */
const presentEvery = Duration.seconds(5)
const deafAfter = Duration.seconds(16)
const goneAfter = Duration.toMillis(deafAfter)
/** How often a process that has not heard itself yet asks the others to answer, in milliseconds, and how many times at most. */
const askEvery = 100
const askAtMost = 50
const sendWithin = Duration.seconds(5)

/**
 * Calls `f` every `everyMs` until it says no more or the scope closes. A plain timer, never what
 * keeps the process running.
 */
const whileScopeOpen = (everyMs: number, f: () => boolean): Effect.Effect<void, never, Scope.Scope> =>
  Effect.asVoid(Effect.acquireRelease(
    Effect.sync(() => {
      const timer: NodeJS.Timeout = setInterval(() => {
        try {
          if (!f()) clearInterval(timer)
        } catch {
          // Nothing it calls throws (a message that cannot be sent is dropped): were one to, it stops.
          clearInterval(timer)
        }
      }, everyMs)
      timer.unref()
      return timer
    }),
    (timer) => Effect.sync(() => clearInterval(timer))
  ))

/** Forgets the entries of `until` that are over at `now`. */
const forgetExpired = (until: Map<string, number>, now: number): void => {
  for (const [key, at] of until) if (at <= now) until.delete(key)
}

/** What the sender sends, in order: an ephemeral event (several go in one message), or a message of its own. */
type Outgoing = { readonly _tag: "Item"; readonly text: string } | { readonly _tag: "Message"; readonly text: string }

/**
 * The relay over `channel`, for as long as the scope is open: `receiver` gets the ephemeral events
 * other processes send of the runs it follows; `followedHere` is what is followed here now, said to
 * a process heard of for the first time.
 */
export const makeLiveRelay = (channel: StoreChannel, receiver: RelayReceiver, followedHere: () => Followed): Effect.Effect<LiveRelay, never, Scope.Scope> =>
  Effect.gen(function*() {
    const self = newId("proc")
    // Whether it has heard itself since it last started listening, on a channel where a process does (`mayGoDeaf`).
    let heardItself = false
    // Who follows what elsewhere, until when.
    const remoteRuns = new Map<string, number>()
    const remoteConversations = new Map<string, number>()
    let remoteAllUntil = 0
    // The other processes heard of, until when they are taken for gone.
    const present = new Map<string, number>()
    const othersPresent = (now: number): boolean => {
      forgetExpired(present, now)
      return present.size > 0
    }

    const heard = (text: string): void => {
      let parsed: unknown
      try {
        parsed = JSON.parse(text)
      } catch {
        return
      }
      // A message this version cannot read (another version's, in a rolling upgrade) is passed by.
      const envelope = envelopeOf(parsed)
      if (envelope._tag === "None") return
      const { answer, from } = envelope.value
      if (from === self) {
        heardItself = true
        return
      }
      const now = Date.now()
      const newcomer = (present.get(from) ?? 0) <= now
      present.set(from, now + goneAfter)
      // What it missed while nobody was told (it answers in turn, once: this one is no newcomer to it then).
      if (newcomer || answer === true) announceNow(followedHere(), true)
      if (envelope.value.kind === "following") {
        const following = followingOf(parsed)
        if (following._tag === "None") return
        forgetExpired(remoteRuns, now)
        forgetExpired(remoteConversations, now)
        if (following.value.all) remoteAllUntil = now + heardFor
        for (const runId of following.value.runs) remoteRuns.set(runId, now + heardFor)
        for (const conversationId of following.value.conversations ?? []) remoteConversations.set(conversationId, now + heardFor)
        return
      }
      const listed = itemsOf(parsed)
      if (listed._tag === "None") return
      const items: Array<RelayedEvent> = []
      for (const item of listed.value.items) {
        const run = runOf(item)
        if (run._tag === "None" || !receiver.wanted(run.value.event.runId, run.value.event.conversationId)) continue
        const relayed = relayedOf(item)
        if (relayed._tag === "Some") items.push(relayed.value)
      }
      if (items.length > 0) receiver.arrived(items)
    }

    const envelope = (items: ReadonlyArray<string>) => `{"kind":"events","from":${JSON.stringify(self)},"items":[${items.join(",")}]}`
    const emptyEnvelope = Buffer.byteLength(envelope([]))
    /** What was taken as messages, each at most `maxMessageBytes`; an event too long for a message alone is left out (its follower misses it, and its turn's end brings its text). */
    const messagesOf = (taken: Iterable<Outgoing>): ReadonlyArray<string> => {
      const messages: Array<string> = []
      let items: Array<string> = []
      let bytes = emptyEnvelope
      const flush = () => {
        if (items.length > 0) messages.push(envelope(items))
        items = []
        bytes = emptyEnvelope
      }
      for (const outgoing of taken) {
        if (outgoing._tag === "Message") {
          flush()
          messages.push(outgoing.text)
          continue
        }
        const size = Buffer.byteLength(outgoing.text) + 1
        if (bytes + size > channel.maxMessageBytes) flush()
        if (bytes + size > channel.maxMessageBytes) continue
        items.push(outgoing.text)
        bytes += size
      }
      flush()
      return messages
    }
    const sendNow = channel.sendNow
    /**
     * Sends what is given, in order: at once on a channel that writes on this thread (without a
     * fiber's operations), else by one fiber, as many events to a message as fit (what comes while
     * one is sent goes in the next). What is given together goes together (a turn's deltas made at
     * once): queued one by one, a waiting sender took the first alone, and the rest came a message
     * later, after the turn's answer the receiver had read meanwhile (too late: dropped).
     */
    const post: (outgoing: ReadonlyArray<Outgoing>) => void = sendNow === undefined
      ? yield* Effect.gen(function*() {
        const outbox = yield* Queue.unbounded<ReadonlyArray<Outgoing>>()
        yield* Queue.takeBetween(outbox, 1, Number.POSITIVE_INFINITY).pipe(
          Effect.flatMap((taken) =>
            Effect.forEach(messagesOf(Chunk.toReadonlyArray(taken).flat()), (message) =>
              channel.send(channelName, message).pipe(
                Effect.timeoutFail({ duration: sendWithin, onTimeout: () => new StoreError({ operation: "send", message: `not sent within ${Duration.format(sendWithin)}` }) }),
                Effect.catchAllCause((cause) => Effect.logDebug("sending to the other processes on the store failed", cause))
              ), { discard: true })
          ),
          Effect.forever,
          Effect.forkScoped
        )
        return (outgoing: ReadonlyArray<Outgoing>) => {
          Queue.unsafeOffer(outbox, outgoing)
        }
      })
      : (outgoing) => {
        for (const message of messagesOf(outgoing)) sendNow(channelName, message)
      }
    const following = (runs: ReadonlyArray<string>, conversations: ReadonlyArray<string>, all: boolean, answer = false) =>
      // `answer` only when it asks: `undefined` is left out of the JSON.
      JSON.stringify({ kind: "following", from: self, runs, conversations, all, answer: answer || undefined })
    const tell = (text: string) => post([{ _tag: "Message", text }])
    /**
     * Says what is followed here: as many messages as the runs and conversations take, each sized
     * as its ids are listed (an id and its comma), not encoded again for every id added. With
     * `always`, a message even when nothing is followed: that this process is there.
     */
    const announceNow = ({ all, conversations, runs }: Followed, always: boolean) => {
      const empty = Buffer.byteLength(following([], [], all))
      let listed = { runs: new Array<string>(), conversations: new Array<string>() }
      let bytes = empty
      const add = (kind: "runs" | "conversations", id: string) => {
        const size = Buffer.byteLength(JSON.stringify(id)) + 1
        if (bytes > empty && bytes + size > channel.maxMessageBytes) {
          tell(following(listed.runs, listed.conversations, all))
          listed = { runs: [], conversations: [] }
          bytes = empty
        }
        listed[kind].push(id)
        bytes += size
      }
      for (const runId of runs) add("runs", runId)
      for (const conversationId of conversations) add("conversations", conversationId)
      if (listed.runs.length + listed.conversations.length > 0 || all || always) tell(following(listed.runs, listed.conversations, all))
    }
    // Where a process hears itself, it asks the others to answer until it does, each time it
    // listens (again): PostgreSQL's listening connection opens after its first word went, and the
    // others' answers with it. On SQLite it listens before their answers come.
    const askUntilHeard = Effect.suspend(() => {
      heardItself = false
      let asked = 0
      return whileScopeOpen(askEvery, () => {
        if (heardItself || asked++ >= askAtMost) return false
        tell(following([], [], false, true))
        return true
      })
    })
    const listening = channel.listen(channelName)
    yield* Effect.scoped(Effect.zipRight(
      channel.mayGoDeaf ? askUntilHeard : Effect.void,
      (channel.mayGoDeaf
        ? Stream.timeoutFail(listening, () => new StoreError({ operation: "listen", message: `heard nothing on the store's channel for ${Duration.format(deafAfter)}` }), deafAfter)
        : listening).pipe(Stream.runForEach((text) => Effect.sync(() => heard(text))))
    )).pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("listening to the other processes on the store failed; listening again", cause)),
      Effect.repeat(Schedule.spaced("1 second")),
      Effect.forkScoped
    )
    // On timers of their own, not an Effect schedule: that runs on the fiber's clock, which tests
    // move by hours (thousands of words at once), and costs a fiber's operations.
    const sayPresent = () => {
      tell(following([], [], false))
      // The gone are forgotten here too: a process that follows nothing never asks who is there.
      othersPresent(Date.now())
    }
    sayPresent()
    yield* whileScopeOpen(Duration.toMillis(presentEvery), () => {
      sayPresent()
      return true
    })

    return {
      wanted: (runId, conversationId) => {
        if (remoteAllUntil === 0 && remoteRuns.size === 0 && remoteConversations.size === 0) return false
        const now = Date.now()
        return remoteAllUntil > now || (remoteRuns.get(runId) ?? 0) > now || (remoteConversations.get(conversationId) ?? 0) > now
      },
      send: (events, after) => post(events.map((event) => ({ _tag: "Item", text: JSON.stringify({ after, event }) }))),
      announce: (followed) => {
        // Alone on the store, nobody would hear it: a process that comes is told as it is heard.
        if (othersPresent(Date.now())) announceNow(followed, false)
      }
    }
  })

/**
 * The highest number of an event of each run handed on lately: whether one of a run numbered
 * after a relayed event's place has gone already. A run is forgotten a minute after its last.
 */
const handedOnLately = () => {
  const rememberFor = 60_000
  const upTo = new Map<string, { readonly seq: number; readonly at: number }>()
  return {
    note: (event: FoundryEvent): void => {
      const known = upTo.get(event.runId)
      if (event.seq === 0 || (known !== undefined && known.seq >= event.seq)) return
      const now = Date.now()
      // Oldest first (re-set runs go last): it stops at the first one still remembered.
      upTo.delete(event.runId)
      upTo.set(event.runId, { seq: event.seq, at: now })
      for (const [runId, entry] of upTo) {
        if (now - entry.at < rememberFor) break
        upTo.delete(runId)
      }
    },
    passed: (runId: string, after: number): boolean => (upTo.get(runId)?.seq ?? 0) > after
  }
}

/** Where the ephemeral events of other processes go, and what their place is read against. */
export interface ArrivalsPlace {
  /** How far the events stored are read here: a relayed event waits until its place is. */
  readonly readTo: () => number
  /** Whether the events of run `runId` (of conversation `conversationId`) are followed here. */
  readonly wanted: (runId: string, conversationId: string) => boolean
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
  const followedLately = handedOnLately()
  const fedLately = handedOnLately()
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
    wanted: place.wanted,
    /** A stored event handed to its run's followers (or read by one as it started). */
    followed: followedLately.note,
    /** A stored event handed to the feed (or read by one of its followers as it started). */
    fed: fedLately.note,
    arrived: (items: ReadonlyArray<RelayedEvent>): void => {
      for (const item of items) if (place.wanted(item.event.runId, item.event.conversationId)) held.push(item)
      release()
      if (held.length > 0) place.lookNow()
    },
    /** Hands on those whose place has been read. */
    release,
    /** The places of those waiting, up to `readTo`, in order. */
    placesUpTo: (readTo: number): ReadonlyArray<number> =>
      [...new Set(held.flatMap((item) => item.after <= readTo ? [item.after] : []))].sort((a, b) => a - b),
    /** Nobody follows here any more. */
    clear: () => {
      held = []
    }
  }
}
