/**
 * Events other processes store reach the followers of this one (a second server, `foundry run`, a
 * cluster's runners): two event logs on one database, as two processes on one store, each tailing
 * what the other writes.
 */
import { createHash } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Context, Deferred, Effect, Fiber, Layer, type Scope, Stream } from "effect"
import { Database } from "../../src/durable/Database.js"
import * as EventLog from "../../src/events/EventLog.js"
import * as EventStorage from "../../src/events/EventStorage.js"
import type { FoundryEvent } from "../../src/events/FoundryEvent.js"
import { backends, type DatabaseLayer, postgres, sqlite } from "../journal/backends.js"
import { OtlpExportLive } from "../../src/events/OtlpExport.js"
import { draft, started } from "../journal/fixtures.js"
import { channelOn, processOn, processWithDatabaseOn } from "./storeProcesses.js"
import { withEnv } from "../support/environment.js"
import { logLines } from "../support/logLines.js"
import { collector } from "./otlpCollector.js"

const run = { id: "r1", agent: "shop", instanceId: "acme", conversationId: "c1" }
const elsewhere = { id: "r2", conversationId: "c2" }

const tests = (fresh: Effect.Effect<DatabaseLayer, unknown, Scope.Scope>) => {
  it.scopedLive("a follower gets the events another process stores, each once and in the order of their numbers: one numbered before an event of its own process that was published first too", () =>
    Effect.gen(function*() {
      const place = yield* fresh
      const here = yield* processOn(place)
      const other = yield* processOn(place)
      const following = yield* here.follow({}, 0).pipe(
        Stream.interruptWhen(Effect.sleep("1500 millis")),
        Stream.runCollect,
        Effect.fork
      )
      yield* Effect.sleep("100 millis")
      // Each pair: the other process stores one, and this one stores the next number at once,
      // publishing it before its tail has read the other's.
      for (const n of [1, 2, 3]) {
        yield* other.emit(draft(`other-${n}`, run, started))
        yield* here.emit(draft(`here-${n}`, run, started))
      }
      const delivered = Chunk.toReadonlyArray(yield* Fiber.join(following))
      // As the feed's SSE stream sends them: a client that resumes after the last id it got misses none.
      expect(delivered.map((event) => event.seq)).toEqual([1, 2, 3, 4, 5, 6])
      expect(delivered.map((event) => event.spanId)).toEqual(["other-1", "here-1", "other-2", "here-2", "other-3", "here-3"])
    }))

  it.scopedLive("a text delta made here comes in the feed after this process's events held back before it", () =>
    Effect.gen(function*() {
      const place = yield* fresh
      // Looks seldom unless woken: by this process's event, held back behind the other's unread one.
      const here = yield* processOn(place, "2 seconds")
      const other = yield* processOn(place)
      const feed = yield* here.follow({}, 0).pipe(Stream.take(3), Stream.runCollect, Effect.fork)
      yield* Effect.sleep("100 millis")
      yield* other.emit(draft("other", run, started))
      yield* here.emit(draft("turn", run, { type: "model.turn.started", data: { turn: 1, model: "demo" } }))
      yield* here.emitLive([draft("delta", run, { type: "model.delta", data: { turn: 1, text: "Hello", at: 0 } })])
      const fed = Chunk.toReadonlyArray(yield* Fiber.join(feed).pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("the feed never carried three events") })))
      expect(fed.map((event) => event.spanId)).toEqual(["other", "turn", "delta"])
    }))

  it.scopedLive("a tail that looks seldom reads everything written since, and publishes none of this process's events again", () =>
    Effect.gen(function*() {
      const place = yield* fresh
      const here = yield* processOn(place, "1500 millis")
      const other = yield* processOn(place)
      const count = 2_500
      // Up to the other process's event, published a look or two after it is stored.
      const following = yield* here.follow({}, 0).pipe(
        Stream.takeUntil((event) => event.spanId === "other"),
        Stream.runCollect,
        Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("the other process's event never came") }),
        Effect.fork
      )
      yield* Effect.sleep("100 millis")
      // More than a page of the tail's between two of its looks, and published here over two seconds before the next.
      yield* Effect.forEach(Array.from({ length: count }, (_, n) => n), (n) => here.emit(draft(`here-${n}`, run, started)), { concurrency: 50 })
      // This process goes on publishing while the tail catches up.
      const ticks = 60
      for (let n = 0; n < ticks; n++) {
        yield* here.emit(draft(`tick-${n}`, run, started))
        yield* Effect.sleep("50 millis")
      }
      yield* other.emit(draft("other", run, started))
      const delivered = Chunk.toReadonlyArray(yield* Fiber.join(following))
      const spans = delivered.map((event) => event.spanId)
      expect(spans.length).toBe(count + ticks + 1)
      expect(new Set(spans).size).toBe(count + ticks + 1)
      expect(spans).toContain("other")
    }), { timeout: 40_000 })

  it.scopedLive("an event of this process stored but not yet published here goes to its run's followers once, however soon the tail looks again", () =>
    Effect.gen(function*() {
      const place = yield* fresh
      // Looks only when woken between its seldom ones: by an event of this process the feed holds back.
      const { database, log: here } = yield* processWithDatabaseOn(place, "1500 millis")
      const other = yield* processOn(place)
      yield* other.emit(draft("queued", run, { type: "run.queued", data: { input: "hello" } }))
      const runEvents = yield* here.runEvents(run.id).pipe(Stream.runCollect, Effect.fork)
      const feed = yield* here.follow({}, 0).pipe(Stream.runDrain, Effect.fork)
      yield* Effect.sleep("100 millis")
      // Committed, and published here only later: as a step's events are, a moment after their commit.
      const [late] = yield* here.stamp([draft("late", run, started)])
      const written = yield* database.write({ statements: [EventStorage.insertEvents([late!])] })
      const stored = EventStorage.sequenced([late!], written._tag === "Written" ? written.rows[0] ?? [] : [])
      // Twice, another process's event and then one of this process, which the feed holds back: a look each, one after the other.
      for (const n of [1, 2]) {
        yield* other.emit(draft(`other-${n}`, run, { type: "model.turn.started", data: { turn: n, model: "demo" } }))
        yield* here.emit(draft(`here-${n}`, run, { type: "model.turn.started", data: { turn: n + 2, model: "demo" } }))
        yield* Effect.sleep("100 millis")
      }
      yield* here.publish(stored)
      yield* Effect.sleep("2 seconds")
      yield* here.emit(draft("end", run, { type: "run.completed", data: { output: "done", turns: 1 } }))
      const spans = Chunk.toReadonlyArray(yield* Fiber.join(runEvents)).map((event) => event.spanId)
      yield* Fiber.interrupt(feed)
      expect(spans.filter((span) => span === "late")).toEqual(["late"])
      expect([...spans].sort()).toEqual(["end", "here-1", "here-2", "late", "other-1", "other-2", "queued"])
    }), { timeout: 20_000 })

  it.scopedLive("an event of this process published while a follower starts the tail goes to its run's followers once", () =>
    Effect.gen(function*() {
      const place = yield* fresh
      const goOn = yield* Deferred.make<void>()
      const { log: here } = yield* processWithDatabaseOn(place, "20 millis", Deferred.await(goOn))
      yield* here.emit(draft("before", run, started))
      // The first follower starts the tail: it has read the newest number, and waits.
      const runEvents = yield* here.runEvents(run.id).pipe(Stream.runCollect, Effect.fork)
      yield* Effect.sleep("100 millis")
      // Stored after that number, and published here before the tail goes on from it.
      yield* here.emit(draft("meanwhile", run, started))
      yield* Deferred.succeed(goOn, undefined)
      // Looks enough for the tail to have read it from the store.
      yield* Effect.sleep("300 millis")
      yield* here.emit(draft("end", run, { type: "run.completed", data: { output: "done", turns: 1 } }))
      const spans = Chunk.toReadonlyArray(yield* Fiber.join(runEvents).pipe(Effect.timeout("10 seconds"))).map((event) => event.spanId)
      expect(spans).toEqual(["before", "meanwhile", "end"])
    }))

  it.scopedLive("reading on from a number gives the events the reader does not know, in order, however they lie among those it knows, and reads none of those", () =>
    Effect.gen(function*() {
      const place = yield* fresh
      const { database, log, storage } = yield* processWithDatabaseOn(place)
      for (let n = 1; n <= 30; n++) yield* log.emit(draft(`e-${n}`, run, started))
      // A row the reader knows that no longer decodes: read, it would be skipped with a warning.
      yield* database.write({ statements: [{ sql: "UPDATE foundry_events SET data = ? WHERE seq = ?", params: ["not json", 4] }] })
      const warnings = yield* logLines
      const spansOf = (events: ReadonlyArray<{ readonly spanId: string }>) => events.map((event) => event.spanId)

      // One stretch not known, and the page ends before the store does.
      const one = yield* storage.readOn(2, 20, (seq) => seq < 10 || seq > 12)
      expect(spansOf(one.events)).toEqual(["e-10", "e-11", "e-12"])
      expect([one.readTo, one.full]).toEqual([22, true])
      // A few stretches, read by their own ranges.
      const few = yield* storage.readOn(0, 100, (seq) => ![7, 8, 15, 29].includes(seq))
      expect(spansOf(few.events)).toEqual(["e-7", "e-8", "e-15", "e-29"])
      expect([few.readTo, few.full]).toEqual([30, false])
      // Every third one not known: more stretches than are read by their own ranges.
      const many = yield* storage.readOn(0, 100, (seq) => seq % 3 !== 0)
      expect(spansOf(many.events)).toEqual(Array.from({ length: 10 }, (_, n) => `e-${3 * (n + 1)}`))
      expect([many.readTo, many.full]).toEqual([30, false])
      // All known: nothing, and where the reading got to.
      const none = yield* storage.readOn(25, 100, () => true)
      expect([none.events, none.readTo, none.full]).toEqual([[], 30, false])
      // Nothing after the newest.
      expect(yield* storage.readOn(30, 100, () => false)).toEqual({ events: [], readTo: 30, full: false })
      expect(warnings).toEqual([])
      // Not known, the row that does not decode is read, and skipped with a warning.
      const unknown = yield* storage.readOn(3, 2, () => false)
      expect([spansOf(unknown.events), unknown.readTo]).toEqual([["e-5"], 5])
      expect(warnings.join("\n")).toContain("skipped 1 stored event(s)")
    }))

  it.scopedLive("a run's follower gets the run's end another process stores, and its stream ends", () =>
    Effect.gen(function*() {
      const place = yield* fresh
      const here = yield* processOn(place)
      const other = yield* processOn(place)
      yield* other.emit(draft("queued", run, { type: "run.queued", data: { input: "hello" } }))
      const events = yield* here.runEvents(run.id).pipe(Stream.runCollect, Effect.fork)
      yield* Effect.sleep("100 millis")
      yield* other.emit(draft("start", run, started))
      yield* other.emit(draft("end", run, { type: "run.completed", data: { output: "done", turns: 1 } }))
      const all = Chunk.toReadonlyArray(yield* Fiber.join(events).pipe(Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error("the run's stream never ended") })))
      expect(all.map((event) => event.type)).toEqual(["run.queued", "run.started", "run.completed"])
    }))
  it.scopedLive("a feed that takes no text deltas has no process make them; one that takes a conversation's has every process make that conversation's", () =>
    Effect.gen(function*() {
      const place = yield* fresh
      // Looks seldom, unless woken: a delta comes at once, the stored events around it a look later.
      const here = yield* processOn(place, "2 seconds")
      const other = yield* processOn(place)
      // One type's follower, not the deltas'.
      yield* here.follow({ type: "run.completed" }, 0).pipe(Stream.runDrain, Effect.forkScoped)
      // The inspector's stream of every event: it shows no text.
      const feed = yield* here.follow({ deltas: false }, 0).pipe(Stream.takeUntil((event) => event.type === "run.completed"), Stream.runCollect, Effect.fork)
      // Longer than a process takes to say what it follows (at once, and every second while it does).
      yield* Effect.sleep("1500 millis")
      expect(here.followed(run)).toBe(false)
      expect(other.followed(run)).toBe(false)
      // Made anyway (an older process), they stay out of that feed.
      yield* other.emit(draft("turn", run, { type: "model.turn.started", data: { turn: 1, model: "demo" } }))
      yield* here.emitLive([draft("delta", run, { type: "model.delta", data: { turn: 1, text: "Hello", at: 0 } })])
      yield* other.emit(draft("end", run, { type: "run.completed", data: { output: "Hello", turns: 1 } }))
      const fed = Chunk.toReadonlyArray(yield* Fiber.join(feed).pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("the feed never carried the run's end") })))
      expect(fed.map((event) => event.spanId)).toEqual(["turn", "end"])
      // A conversation's page streams its replies: every process makes the deltas of that conversation's runs, and no other's.
      const next = { ...run, id: "r3" }
      const conversation = yield* here.follow({ conversationId: run.conversationId }, 0).pipe(
        Stream.takeUntil((event) => event.type === "run.completed" && event.runId === next.id),
        Stream.runCollect,
        Effect.fork
      )
      for (let attempt = 0; attempt < 100 && !other.followed(next); attempt++) yield* Effect.sleep("20 millis")
      expect(other.followed(next)).toBe(true)
      expect(here.followed(next)).toBe(true)
      yield* Effect.sleep("1500 millis")
      expect(other.followed(elsewhere)).toBe(false)
      expect(here.followed(elsewhere)).toBe(false)
      yield* other.emit(draft("turn 2", next, { type: "model.turn.started", data: { turn: 1, model: "demo" } }))
      yield* other.emitLive([draft("delta 2", next, { type: "model.delta", data: { turn: 1, text: "Hi", at: 0 } })])
      yield* other.emit(draft("end 2", next, { type: "run.completed", data: { output: "Hi", turns: 1 } }))
      const streamed = Chunk.toReadonlyArray(yield* Fiber.join(conversation).pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("the conversation's feed never carried the run's end") })))
      expect(streamed.filter((event) => event.runId === next.id).map((event) => event.spanId)).toEqual(["turn 2", "delta 2", "end 2"])
    }))

  it.scopedLive("a process that follows more runs than one message of the store's channel can name has the others hear of every one", () =>
    Effect.gen(function*() {
      const place = yield* fresh
      const here = yield* processOn(place)
      const other = yield* processOn(place)
      // 200 runs' ids take about 16 KB listed: more than one message carries (under 8 KB).
      const many = Array.from({ length: 200 }, (_, n) => ({ ...run, id: `run_${String(n).padStart(4, "0")}_${"x".repeat(70)}`, conversationId: `conv_${n}` }))
      yield* Effect.forEach(many, (each) => other.emit(draft(`queued ${each.id}`, each, { type: "run.queued", data: { input: "hello" } })), { discard: true })
      yield* Effect.forEach(many, (each) => here.followRun(each.id), { discard: true })
      const heard = () => many.filter((each) => other.followed(each)).length
      for (let attempt = 0; attempt < 250 && heard() < many.length; attempt++) yield* Effect.sleep("20 millis")
      expect(heard()).toBe(many.length)
      // Each was said alone when first followed; what keeps them heard is the whole list, said every
      // second, which takes more than one message.
      yield* Effect.sleep("4 seconds")
      expect(heard()).toBe(many.length)
      expect(other.followed(elsewhere)).toBe(false)
    }))

  it.scopedLive("a process alone on the store keeps what it follows to itself, and tells a process that comes as it is heard", () =>
    Effect.gen(function*() {
      const place = yield* fresh
      // It looks at the store (and says what it follows, when anyone may hear) every 10 s only:
      // the process that comes hears of its followed run from its answer.
      const here = yield* processOn(place, "10 seconds")
      // What goes over the channel, heard by a connection of its own that says nothing (no process).
      const channel = yield* channelOn(place)
      const said: Array<string> = []
      yield* channel.listen("foundry_live").pipe(Stream.runForEach((text) => Effect.sync(() => said.push(text))), Effect.forkScoped)
      yield* Effect.sleep("200 millis")
      const saidBefore = said.length
      yield* here.followRun(run.id)
      // Longer than a process takes to say what it follows (at once, and every second while it does).
      yield* Effect.sleep("1500 millis")
      const naming = () => said.filter((text) => text.includes(`"${run.id}"`))
      expect(naming()).toEqual([])
      // At most its word that it is there (every 5 s): nothing said again and again.
      expect(said.length - saidBefore).toBeLessThanOrEqual(1)
      const other = yield* processOn(place)
      // Well within the 10 s after which the first would have said it anyway: it was the answer. The
      // listening connection above hears it on its own, as soon as the other process or a little after.
      for (let attempt = 0; attempt < 250 && (!other.followed(run) || naming().length === 0); attempt++) yield* Effect.sleep("20 millis")
      expect(other.followed(run)).toBe(true)
      expect(naming().length).toBeGreaterThan(0)
      expect(other.followed(elsewhere)).toBe(false)
    }))

  it.scopedLive("a process that comes and follows a run at once has the processes already on the store hear of it at once", () =>
    Effect.gen(function*() {
      const place = yield* fresh
      // Follows nothing: it says only that it is there, every 5 s.
      const there = yield* processOn(place)
      yield* Effect.sleep("500 millis")
      const other = yield* processOn(place)
      yield* other.followRun(run.id)
      for (let attempt = 0; attempt < 75 && !there.followed(run); attempt++) yield* Effect.sleep("20 millis")
      expect(there.followed(run)).toBe(true)
      expect(there.followed(elsewhere)).toBe(false)
    }))

  it.scopedLive("the OpenTelemetry export, which makes spans of stored events only, has no process make text deltas", () =>
    Effect.gen(function*() {
      const place = yield* fresh
      const here = yield* processOn(place)
      const other = yield* processOn(place)
      const otel = yield* collector()
      yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: otel.url, OTEL_BSP_SCHEDULE_DELAY: "50" })
      yield* Layer.build(OtlpExportLive.pipe(Layer.provide(Layer.succeed(EventLog.EventLog, here))))
      // It follows the feed: the run's start, which the other process writes, reaches it, and the
      // span goes to the collector when this process ends it (one span id).
      yield* other.emit(draft("run", run, started))
      yield* here.emit(draft("run", run, { type: "run.completed", data: { output: "done", turns: 1 } }))
      for (let attempt = 0; attempt < 250 && otel.spans().length === 0; attempt++) yield* Effect.sleep("20 millis")
      expect(otel.spans().length).toBeGreaterThan(0)
      expect(here.followed(elsewhere)).toBe(false)
      expect(other.followed(elsewhere)).toBe(false)
    }), { timeout: 20_000 })

  it.scopedLive("text deltas another process makes reach a run's followers here and the feed, each after the stored events before it and before those after it", () =>
    Effect.gen(function*() {
      const place = yield* fresh
      // Looks seldom, unless woken: deltas come at once, the stored events before them a look later.
      const here = yield* processOn(place, "2 seconds")
      const other = yield* processOn(place)
      yield* other.emit(draft("queued", run, { type: "run.queued", data: { input: "hello" } }))
      // What each has handed on so far: a follower that read the run's stored events after its turn
      // had ended would rightly drop the turn's deltas, which come too late for it.
      const handedOn = { events: new Array<string>(), feed: new Array<string>() }
      const noted = (to: Array<string>) => (event: FoundryEvent) => Effect.sync(() => to.push(event.spanId))
      const events = yield* here.runEvents(run.id).pipe(Stream.tap(noted(handedOn.events)), Stream.runCollect, Effect.fork)
      const feed = yield* here.follow({}, 0).pipe(
        Stream.takeUntil((event) => event.type === "run.completed"),
        Stream.tap(noted(handedOn.feed)),
        Stream.runCollect,
        Effect.fork
      )
      // The process that executes the run hears that it is followed, and only then makes deltas (the
      // run's follower and the feed say so each in a message of its own, in either order); both
      // followers here have read what was stored before the turn.
      const ready = () => other.followed(run) && other.followed(elsewhere) && handedOn.events.includes("queued") && handedOn.feed.includes("queued")
      for (let attempt = 0; attempt < 500 && !ready(); attempt++) yield* Effect.sleep("20 millis")
      expect(handedOn.events).toEqual(["queued"])
      expect(handedOn.feed).toEqual(["queued"])
      expect(other.followed(run)).toBe(true)
      // The feed followed here takes every run's.
      expect(other.followed(elsewhere)).toBe(true)
      const delta = (id: string, text: string, at: number) => draft(id, run, { type: "model.delta", data: { turn: 1, text, at } })
      yield* other.emit(draft("turn", run, { type: "model.turn.started", data: { turn: 1, model: "demo" } }))
      yield* other.emitLive([delta("d1", "Hel", 0), delta("d2", "lo", 3)])
      yield* other.emit(draft("answer", run, {
        type: "model.turn.completed",
        data: { turn: 1, model: "demo", text: "Hello", toolCalls: [], usage: { inputTokens: 1, outputTokens: 2, costUsd: null }, durationMs: 5 }
      }))
      yield* other.emit(draft("end", run, { type: "run.completed", data: { output: "Hello", turns: 1 } }))
      const order = ["queued", "turn", "d1", "d2", "answer", "end"]
      const followed = Chunk.toReadonlyArray(yield* Fiber.join(events).pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("the run's stream never ended") })))
      expect(followed.map((event) => event.spanId)).toEqual(order)
      const fed = Chunk.toReadonlyArray(yield* Fiber.join(feed).pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("the feed never carried the run's end") })))
      expect(fed.map((event) => event.spanId)).toEqual(order)
    }))
}

describe.skipIf(postgres.skip)("events of processes writing at once on PostgreSQL", () => {
  it.scopedLive("a number a rolled-back transaction took never comes: the feed hands on the events after it", () =>
    Effect.gen(function*() {
      const place = yield* postgres.fresh
      const { database, log: here } = yield* processWithDatabaseOn(place, "10 seconds")
      const delivered = yield* here.follow({}, 0).pipe(Stream.take(2), Stream.runCollect, Effect.fork)
      yield* Effect.sleep("100 millis")
      yield* here.emit(draft("before", run, started))
      // Takes the next number, then fails: its transaction is undone, the number is gone.
      const [undone] = yield* here.stamp([draft("undone", run, started)])
      const failed = yield* Effect.either(database.write({ statements: [EventStorage.insertEvents([undone!]), { sql: "SELECT 1/0", params: [] }] }))
      expect(failed._tag).toBe("Left")
      yield* here.emit(draft("after", run, started))
      const events = Chunk.toReadonlyArray(yield* Fiber.join(delivered).pipe(
        Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error("the event after the gap never came") })
      ))
      expect(events.map((event) => event.spanId)).toEqual(["before", "after"])
      expect((events[1]?.seq ?? 0) - (events[0]?.seq ?? 0)).toBe(2)
    }))

  it.scopedLive("a process whose listening connection is cut listens again: the deltas of a run another process executes reach its followers again", () =>
    Effect.gen(function*() {
      const place = yield* postgres.fresh
      const { database, log: here } = yield* processWithDatabaseOn(place)
      const other = yield* processOn(place)
      yield* other.emit(draft("queued", run, { type: "run.queued", data: { input: "hello" } }))
      let received = 0
      yield* here.runEvents(run.id).pipe(
        Stream.runForEach((event) => Effect.sync(() => {
          if (event.type === "model.delta") received++
        })),
        Effect.forkScoped
      )
      const delta = (n: number) => draft(`d${n}`, run, { type: "model.delta", data: { turn: 1, text: `word ${n} `, at: 0 } })
      /** Sends a delta now and then until more than `count` have come, or `withinMs` has passed. */
      const sendUntilMoreThan = (count: number, withinMs: number) =>
        Effect.gen(function*() {
          const started = Date.now()
          for (let n = 0; received <= count && Date.now() - started < withinMs; n++) {
            yield* other.emitLive([delta(n)])
            yield* Effect.sleep("200 millis")
          }
        })
      yield* sendUntilMoreThan(0, 10_000)
      expect(received).toBeGreaterThan(0)
      // Both processes' listening connections cut, as a database restart or a proxy would.
      const [schema] = yield* database.read({ sql: "SELECT current_schema() AS schema", params: [] })
      const channel = `foundry_live_${createHash("sha256").update(String(schema?.["schema"])).digest("hex").slice(0, 16)}`
      const cut = yield* database.read({ sql: `SELECT pg_terminate_backend(pid) AS cut FROM pg_stat_activity WHERE query = 'LISTEN "${channel}"'`, params: [] })
      expect(cut.length).toBe(2)
      yield* Effect.sleep("500 millis")
      const beforeCut = received
      yield* sendUntilMoreThan(beforeCut, 45_000)
      expect(received).toBeGreaterThan(beforeCut)
    }), { timeout: 60_000 })

  it.scopedLive("an event commits before any numbered after it: a client paging with `after` misses none", () =>
    Effect.gen(function*() {
      const place = yield* postgres.fresh
      const open = Effect.map(Layer.build(EventStorage.layer.pipe(Layer.provideMerge(place))), (context) => ({
        database: Context.get(context, Database),
        storage: Context.get(context, EventStorage.EventStorage)
      }))
      const slow = yield* open
      const quick = yield* open
      const event = (id: string) => ({ ...draft(id, run, started), id, time: Date.now(), release: "r1" })
      // The first takes its number, then holds its transaction open; the second writes meanwhile.
      const first = yield* slow.database.write({
        statements: [EventStorage.insertEvents([event("first")]), { sql: "SELECT pg_sleep(0.6)", params: [] }]
      }).pipe(Effect.fork)
      yield* Effect.sleep("150 millis")
      const second = yield* quick.database.write({ statements: [EventStorage.insertEvents([event("second")])] }).pipe(Effect.fork)
      yield* Effect.sleep("200 millis")
      const firstPage = yield* quick.storage.list({ after: 0 })
      yield* Fiber.join(first)
      yield* Fiber.join(second)
      const nextPage = yield* quick.storage.list({ after: firstPage[firstPage.length - 1]?.seq ?? 0 })
      expect([...firstPage, ...nextPage].map((e) => e.spanId)).toEqual(["first", "second"])
    }))
})

describe("the SQLite store's channel", () => {
  it.scopedLive("a listener hears what was sent after it asked to listen, however late its stream starts, and a stream run again goes on where it was", () =>
    Effect.gen(function*() {
      const place = yield* sqlite.fresh
      const listener = yield* channelOn(place)
      const sender = yield* channelOn(place)
      // Asked for, then run only later: a process says it is there between the two, and is answered.
      const listening = listener.listen("test")
      yield* sender.send("test", "answer")
      const heard = (count: number) =>
        listening.pipe(Stream.take(count), Stream.runCollect, Effect.map(Chunk.toReadonlyArray), Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error("heard nothing") }))
      expect(yield* heard(1)).toEqual(["answer"])
      yield* sender.send("test", "next")
      expect(yield* heard(1)).toEqual(["next"])
    }))
})

for (const backend of backends) {
  describe.skipIf(backend.skip)(`events of other processes on ${backend.name}`, () => tests(backend.fresh))
}
