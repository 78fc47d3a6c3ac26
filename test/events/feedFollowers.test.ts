/**
 * Followers of the event log take what they are handed: the stored history (the feed's, a run's)
 * handed on page by page, then the live events; a follower that takes nothing while its inbox fills (an SSE
 * client that stopped reading) has its events let go, instead of holding every event published
 * since, and reads on from the store when it takes again. On SQLite, through the event log's own API.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Context, Effect, Fiber, Layer, Option, Stream } from "effect"
import { EventLog, type RunFollower } from "../../src/events/EventLog.js"
import { inboxCapacity } from "../../src/events/eventInbox.js"
import { sequenced } from "../../src/events/EventStorage.js"
import type { FoundryEvent } from "../../src/events/FoundryEvent.js"
import { RunJournal } from "../../src/journal/RunJournal.js"
import { sqlite, storageLayer } from "../journal/backends.js"
import { completed, draft, newRun, started, submit } from "../journal/fixtures.js"

const run = newRun("run_1")

/** The event log on a fresh SQLite store, and its run journal. */
const freshStorage = Effect.gen(function*() {
  const context = yield* Layer.build(storageLayer(yield* sqlite.fresh))
  return { log: Context.get(context, EventLog), journal: Context.get(context, RunJournal) }
})

const freshLog = Effect.map(freshStorage, ({ log }) => log)


/** `count` events of run_1 as if stored, numbered from `from` on: published, not written. */
const storedLike = (log: Context.Tag.Service<EventLog>, from: number, count: number) =>
  Effect.map(
    log.stamp(Array.from({ length: count }, (_, index) => draft(`span-${from + index}`, run, started))),
    (stamped) => sequenced(stamped, stamped.map((_, index) => ({ seq: from + index })))
  )

/** Every event a pull hands on until `count` have come. */
const take = (pull: Effect.Effect<Chunk.Chunk<FoundryEvent>, Option.Option<unknown>>, count: number) =>
  Effect.gen(function*() {
    const taken: Array<FoundryEvent> = []
    while (taken.length < count) taken.push(...Chunk.toReadonlyArray(yield* pull))
    return taken
  })

/** What a run's follower hands on next: its events, or `undefined` once the run has ended. */
const nextOf = (follower: RunFollower) =>
  Effect.async<ReadonlyArray<FoundryEvent> | undefined>((resume) => {
    const takeBack = follower((events) => resume(Effect.succeed(events)))
    return Effect.sync(takeBack)
  })

describe("the event log's followers", () => {
  it.scoped("the feed from the start: every stored event in order, page by page, then the live ones once each", () =>
    Effect.gen(function*() {
      const log = yield* freshLog
      // More than two of the feed's pages.
      yield* Effect.forEach(Array.from({ length: 2_500 }, (_, index) => index), (index) => log.emit(draft(`span-${index}`, run, started)), {
        concurrency: 50,
        discard: true
      })
      const pull = yield* Stream.toPull(log.follow({}, 0))
      const history = yield* take(pull, 2_500)
      expect(history.length).toBe(2_500)
      expect(history.every((event, index) => index === 0 || event.seq > (history[index - 1]?.seq ?? 0))).toBe(true)
      const live = yield* log.emit(draft("span-live", run, started))
      expect((yield* take(pull, 1)).map((event) => event.seq)).toEqual([live.seq])
    }))

  it.scoped("a feed follower that takes nothing while more than its inbox holds is stored reads on from the store: each event once, in order", () =>
    Effect.gen(function*() {
      const log = yield* freshLog
      const slow = yield* Stream.toPull(log.follow({}, 0))
      // It follows from its first pull: the stored event, then what is published.
      const first = yield* log.emit(draft("span-first", run, started))
      expect((yield* take(slow, 1)).map((event) => event.seq)).toEqual([first.seq])
      // More than an inbox holds, while it takes none: its inbox lets them go, the store keeps them.
      yield* Effect.forEach(Array.from({ length: inboxCapacity + 100 }, (_, index) => index), (index) => log.emit(draft(`span-${index}`, run, started)), {
        concurrency: 50,
        discard: true
      })
      const rest = yield* take(slow, inboxCapacity + 100)
      expect(rest.length).toBe(inboxCapacity + 100)
      expect(rest.every((event, index) => event.seq > (index === 0 ? first.seq : rest[index - 1]?.seq ?? 0))).toBe(true)
      // And then live again.
      const live = yield* log.emit(draft("span-live", run, started))
      expect((yield* take(slow, 1)).map((event) => event.seq)).toEqual([live.seq])
    }))

  it.scoped("a run's follower that takes nothing while more than its inbox holds is published reads on from the store: each event once, in order, to the run's end", () =>
    Effect.gen(function*() {
      const { journal, log } = yield* freshStorage
      yield* submit(journal, run)
      const follower = Option.getOrThrow(yield* log.followRun(run.id))
      const next = nextOf(follower)
      const queued = yield* next
      expect(queued?.map((event) => event.type)).toEqual(["run.queued"])
      // More than an inbox holds, while it takes none: its inbox lets them go, the store keeps them.
      const published = yield* Effect.forEach(Array.from({ length: inboxCapacity + 100 }, (_, index) => index), (index) => log.emit(draft(`span-${index}`, run, started)), {
        concurrency: 50
      })
      const rest: Array<FoundryEvent> = []
      const handed: Array<number> = []
      while (rest.length < published.length) {
        const events = (yield* next) ?? []
        handed.push(events.length)
        rest.push(...events)
      }
      expect(rest.map((event) => event.seq)).toEqual(published.map((event) => event.seq).sort((a, b) => a - b))
      // Read from the store a page at a time: an inbox that had kept them would hand them on in one take.
      expect(Math.max(...handed)).toBeLessThanOrEqual(1_000)
      // Then live again, up to the run's end.
      const waiting = yield* Effect.fork(next)
      yield* Effect.yieldNow()
      const end = yield* log.emit(draft("span-end", run, completed))
      expect((yield* Fiber.join(waiting))?.map((event) => event.seq)).toEqual([end.seq])
      expect(yield* next).toBeUndefined()
    }))

  it.scoped("a run's follower hands on its stored history a page at a time, then what was published meanwhile: each event once, in order", () =>
    Effect.gen(function*() {
      const { journal, log } = yield* freshStorage
      yield* submit(journal, run)
      // More than two pages of history.
      yield* Effect.forEach(Array.from({ length: 2_500 }, (_, index) => index), (index) => log.emit(draft(`span-${index}`, run, started)), {
        concurrency: 50,
        discard: true
      })
      const follower = Option.getOrThrow(yield* log.followRun(run.id))
      const next = nextOf(follower)
      const first = (yield* next) ?? []
      // Held whole, the history would come in one take.
      expect(first.length).toBe(1_000)
      // Published while the rest of the history is still to read: stored, and in the inbox too.
      const meanwhile = yield* Effect.forEach(["span-a", "span-b", "span-c"], (id) => log.emit(draft(id, run, started)))
      const end = yield* log.emit(draft("span-end", run, completed))
      const rest: Array<FoundryEvent> = []
      const handed: Array<number> = [first.length]
      while (true) {
        const events = yield* next
        if (events === undefined) break
        handed.push(events.length)
        rest.push(...events)
      }
      const seqs = [...first, ...rest].map((event) => event.seq)
      expect(seqs.length).toBe(1 + 2_500 + meanwhile.length + 1)
      expect(seqs.every((seq, index) => index === 0 || seq > (seqs[index - 1] ?? 0))).toBe(true)
      expect(seqs.slice(-4)).toEqual([...meanwhile, end].map((event) => event.seq))
      expect(Math.max(...handed)).toBeLessThanOrEqual(1_000)
    }))

  it.scoped("a text delta published while a run's follower reads its history comes once: not again after the stored event that followed it", () =>
    Effect.gen(function*() {
      const { journal, log } = yield* freshStorage
      yield* submit(journal, run)
      yield* Effect.forEach(Array.from({ length: 1_500 }, (_, index) => index), (index) => log.emit(draft(`span-${index}`, run, started)), {
        concurrency: 50,
        discard: true
      })
      const follower = Option.getOrThrow(yield* log.followRun(run.id))
      const next = nextOf(follower)
      expect(((yield* next) ?? []).length).toBe(1_000)
      // A delta, then the stored event that holds its text, both before the follower reads on: it
      // reads that event from the store, so the delta put in its inbox before it is old news.
      yield* log.emitLive([draft("delta-1", run, { type: "model.delta", data: { turn: 1, text: "Hel", at: 0 } })])
      const turn = yield* log.emit(draft("span-turn", run, started))
      // The rest of the history, up to that event.
      expect(((yield* next) ?? []).map((event) => event.seq).slice(-1)).toEqual([turn.seq])
      yield* log.emitLive([draft("delta-2", run, { type: "model.delta", data: { turn: 2, text: "lo", at: 0 } })])
      const end = yield* log.emit(draft("span-end", run, completed))
      const live: Array<FoundryEvent> = []
      while (true) {
        const events = yield* next
        if (events === undefined) break
        live.push(...events)
      }
      expect(live.map((event) => event.spanId)).toEqual(["delta-2", end.spanId])
    }))

  it.scoped("a live follower of one run with a filter of its type gets that run's events of that type only", () =>
    Effect.gen(function*() {
      const { journal, log } = yield* freshStorage
      yield* submit(journal, run)
      const pull = yield* Stream.toPull(log.follow({ runId: run.id, type: "run.completed" }, 0))
      const finished = yield* Effect.fork(take(pull, 1))
      yield* Effect.yieldNow()
      yield* log.publish(yield* storedLike(log, 100, 3))
      const completedLike = yield* Effect.map(
        log.stamp([draft("span-end", run, completed)]),
        (stamped) => sequenced(stamped, [{ seq: 200 }])
      )
      yield* log.publish(completedLike)
      expect((yield* Fiber.join(finished)).map((event) => [event.seq, event.type])).toEqual([[200, "run.completed"]])
    }))
})
