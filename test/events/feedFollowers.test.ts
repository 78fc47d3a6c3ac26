/**
 * Followers of the event log take what they are handed: the feed's stored history streamed page
 * by page, then its live events; a follower that takes nothing while its inbox fills (an SSE
 * client that stopped reading) is ended, its events let go, instead of holding every event
 * published since. On SQLite, through the event log's own API.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Context, Effect, Either, Layer, Option, Stream } from "effect"
import { EventLog, type RunFollower } from "../../src/events/EventLog.js"
import { inboxCapacity } from "../../src/events/eventInbox.js"
import { sequenced } from "../../src/events/EventStorage.js"
import type { FoundryEvent } from "../../src/events/FoundryEvent.js"
import { RunJournal } from "../../src/journal/RunJournal.js"
import { sqlite, storageLayer } from "../journal/backends.js"
import { draft, newRun, started, submit } from "../journal/fixtures.js"

const run = newRun("run_1")

/** The event log on a fresh SQLite store, and its run journal. */
const freshStorage = Effect.gen(function*() {
  const context = yield* Layer.build(storageLayer(yield* sqlite.fresh))
  return { log: Context.get(context, EventLog), journal: Context.get(context, RunJournal) }
})

const freshLog = Effect.map(freshStorage, ({ log }) => log)

/** What a run's follower hands on at its next call: its events, or `undefined` for no more. */
const delivered = (follower: RunFollower) =>
  Effect.async<ReadonlyArray<FoundryEvent> | undefined>((resume) => Effect.sync(follower((events) => resume(Effect.succeed(events)))))

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

  it.scoped("a feed follower that takes nothing while its inbox fills is ended; one that takes goes on", () =>
    Effect.gen(function*() {
      const log = yield* freshLog
      const slow = yield* Stream.toPull(log.follow({}, 0))
      const keeping = yield* Stream.toPull(log.follow({}, 0))
      // Each follows from its first pull: the stored event, then what is published.
      const first = yield* log.emit(draft("span-first", run, started))
      expect((yield* take(slow, 1)).map((event) => event.seq)).toEqual([first.seq])
      expect((yield* take(keeping, 1)).map((event) => event.seq)).toEqual([first.seq])
      // More than an inbox holds, while the slow follower takes none; the other takes them as they come.
      for (let from = first.seq + 1; from <= first.seq + inboxCapacity + 1; from += 1_000) {
        yield* log.publish(yield* storedLike(log, from, 1_000))
        expect((yield* take(keeping, 1_000)).length).toBe(1_000)
      }
      expect(Either.isLeft(yield* Effect.either(slow))).toBe(true)
      yield* log.publish(yield* storedLike(log, 100_000, 1))
      expect((yield* take(keeping, 1)).map((event) => event.seq)).toEqual([100_000])
    }))

  it.scoped("a run's follower that takes nothing while its inbox fills is told there is no more", () =>
    Effect.gen(function*() {
      const { journal, log } = yield* freshStorage
      yield* submit(journal, run)
      const follower = yield* log.followRun(run.id)
      if (Option.isNone(follower)) return yield* Effect.dieMessage("the run was not found")
      expect((yield* delivered(follower.value))?.map((event) => event.type)).toEqual(["run.queued"])
      yield* log.publish(yield* storedLike(log, 10, inboxCapacity + 1))
      expect(yield* delivered(follower.value)).toBeUndefined()
    }))
})
