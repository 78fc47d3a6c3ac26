/**
 * A run's step buffer on the run journal (SQLite on a temporary file): a step handed on with
 * `commitSoon` (the run's start, or the last turn's call results, with a turn begun) goes with the
 * run's next commit of the same turn of the event loop, or is written on its own at the next turn
 * unless the model has answered by then; one holding a model's answer is committed before
 * `commitSoon` returns; text deltas reach followers after the turn's start; a settled buffer (its
 * execution stopped) writes a step handed on at once; an abandoned one writes nothing it was handed;
 * a timer call's change to the timers goes in with the step that holds its answer, or not at all.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option, Queue, Stream } from "effect"
import { ActivationStorage } from "../../src/durable/ActivationStorage.js"
import { Database } from "../../src/durable/Database.js"
import type { RunRecord } from "../../src/durable/records.js"
import { Store } from "../../src/durable/Store.js"
import { agentTimer } from "../../src/engine/agentTimers.js"
import { makeStepBuffer } from "../../src/engine/StepBuffer.js"
import { EventLog } from "../../src/events/EventLog.js"
import type { TimerChange } from "../../src/journal/journalRecords.js"
import { RunJournal } from "../../src/journal/RunJournal.js"
import { sqlite, storageLayer } from "../journal/backends.js"
import { draft, newRun, submit, tool, user } from "../journal/fixtures.js"

/** A submitted run, a step buffer fenced by its lease, what the store holds of the run, and the write transactions so far. */
const bufferedRun = Effect.gen(function*() {
  const context = yield* Layer.build(storageLayer(yield* sqlite.fresh))
  const journal = Context.get(context, RunJournal)
  const store = Context.get(context, Store)
  const run = yield* submit(journal, newRun("r1"))
  const claimed = yield* journal.claim(run, "executor", 60_000)
  if (claimed._tag !== "Claimed") return yield* Effect.dieMessage("the lease is held")
  const step = yield* makeStepBuffer(run, claimed.lease).pipe(Effect.provide(context))
  const stored = Effect.gen(function*() {
    const record = Option.getOrThrow(yield* store.getRun(run.id))
    const messages = (yield* store.listMessages(run.conversationId)).map((m) => m.message._tag)
    return { status: record.status, messages }
  })
  const transactions = Effect.map(Context.get(context, Database).stats, (stats) => stats.writeTransactions)
  const startedAt = Effect.map(store.getRun(run.id), (record) => Option.getOrThrow(record).startedAt)
  // The types of the run's events as a live follower receives them (text deltas are made only for one).
  const followed: Array<string> = []
  const follow = Effect.zipRight(
    Effect.forkScoped(Stream.runForEach(Context.get(context, EventLog).follow({ runId: run.id }, 0), (event) => Effect.sync(() => followed.push(event.type)))),
    Effect.sleep("20 millis")
  )
  // Ends the run as a cancel from another process does (no lease): the buffer's lease no longer fences in.
  const cancelElsewhere = journal.record(run, { events: [draft("cancelled", run, { type: "run.cancelled", data: { from: "queued" } })], status: { status: "cancelled" } })
  const activations = Context.get(context, ActivationStorage)
  return { run, step, stored, transactions, startedAt, follow, followed, cancelElsewhere, activations }
})

/** A timer that wakes `run`'s conversation in 2030, as `foundry_sleep` arms one. */
const wakeUp = (run: RunRecord, id: string): TimerChange => ({
  _tag: "Save",
  activation: agentTimer(run, id, { at: "2030-01-01T00:00:00.000Z" }, "wake up", Date.parse("2030-01-01T00:00:00.000Z"), run.conversationId)
})

/** `effect` in the turn of the event loop that writes a step handed on: after it began, before it commits. */
const whileTheStepIsWritten = (effect: Effect.Effect<void>) =>
  Effect.async<void>((resume) => {
    setImmediate(() => {
      Effect.runSync(effect)
      resume(Effect.void)
    })
  })

/** The start of a run as the engine hands it on before its first model call. */
const start = (step: Effect.Effect.Success<typeof bufferedRun>["step"], run: RunRecord) => {
  step.emit("run.started", "run", { input: run.input, model: "demo" })
  step.message(user)
  step.emit("model.turn.started", "turn:1", { turn: 1, model: "demo" })
  return step.commitSoon({ status: { status: "running" } })
}

/** Turn 1 of a run answered with a call, committed before the call runs. */
const calledOnce = (step: Effect.Effect.Success<typeof bufferedRun>["step"]) => {
  step.message(user)
  step.message({ _tag: "assistant", content: "", toolCalls: [{ id: "call-1", name: "lookup", arguments: "{}" }] })
  return step.commit({ status: { status: "running" } })
}

describe("a run's step buffer", () => {
  it.scopedLive("a step handed on goes with a commit of the same turn of the event loop: one transaction", () =>
    Effect.gen(function*() {
      const { run, startedAt, step, stored, transactions } = yield* bufferedRun
      const before = yield* transactions
      yield* start(step, run)
      step.message({ _tag: "assistant", content: "done", toolCalls: [] })
      yield* step.commit({ status: { status: "completed", output: "done" } })
      expect(yield* stored).toEqual({ status: "completed", messages: ["user", "assistant"] })
      expect((yield* transactions) - before).toBe(1)
      // Started as well as finished.
      expect(yield* startedAt).not.toBeNull()
      // Nothing is written again at the next turn of the loop.
      yield* Effect.sleep("50 millis")
      expect((yield* transactions) - before).toBe(1)
    }))

  it.scopedLive("with no commit in this turn of the loop, it is written on its own at the next", () =>
    Effect.gen(function*() {
      const { run, step, stored, transactions } = yield* bufferedRun
      const before = yield* transactions
      yield* start(step, run)
      expect(yield* stored).toEqual({ status: "queued", messages: [] })
      yield* Effect.sleep("50 millis")
      expect(yield* stored).toEqual({ status: "running", messages: ["user"] })
      expect((yield* transactions) - before).toBe(1)
    }))

  it.scopedLive("once the model has answered, the loop turning (a read before the next commit) leaves it to that commit: one transaction", () =>
    Effect.gen(function*() {
      const { run, step, stored, transactions } = yield* bufferedRun
      const before = yield* transactions
      yield* start(step, run)
      step.message({ _tag: "assistant", content: "", toolCalls: [{ id: "call-1", name: "lookup", arguments: "{}" }] })
      // As the tool call's read of the instance's context does on PostgreSQL, a round trip.
      yield* Effect.sleep("50 millis")
      expect(yield* stored).toEqual({ status: "queued", messages: [] })
      step.emit("tool.call.started", "tool:call-1", { toolCallId: "call-1", tool: "lookup", input: {} })
      yield* step.commit()
      expect(yield* stored).toEqual({ status: "running", messages: ["user", "assistant"] })
      expect((yield* transactions) - before).toBe(1)
    }))

  it.scopedLive("a step that holds only the last turn's call results is handed on, and goes with the next turn's answer: one transaction", () =>
    Effect.gen(function*() {
      const { step, stored, transactions } = yield* bufferedRun
      yield* calledOnce(step)
      const before = yield* transactions
      step.message(tool)
      step.emit("model.turn.started", "turn:2", { turn: 2, model: "demo" })
      yield* step.commitSoon()
      expect(yield* stored).toEqual({ status: "running", messages: ["user", "assistant"] })
      step.message({ _tag: "assistant", content: "shipped", toolCalls: [] })
      yield* step.commit({ status: { status: "completed", output: "shipped" } })
      expect(yield* stored).toEqual({ status: "completed", messages: ["user", "assistant", "tool", "assistant"] })
      expect((yield* transactions) - before).toBe(1)
    }))

  it.scopedLive("a step that holds a model's answer (its calls, their results) is committed before commitSoon returns", () =>
    Effect.gen(function*() {
      const { step, stored } = yield* bufferedRun
      step.message(user)
      step.message({ _tag: "assistant", content: "", toolCalls: [{ id: "call-1", name: "lookup", arguments: "{}" }] })
      step.message(tool)
      yield* step.commitSoon({ status: { status: "running" } })
      expect(yield* stored).toEqual({ status: "running", messages: ["user", "assistant", "tool"] })
    }))

  it.scopedLive("text deltas that come while the step is written reach followers after it, not before the turn has begun", () =>
    Effect.gen(function*() {
      const { follow, followed, run, step } = yield* bufferedRun
      yield* follow
      yield* start(step, run)
      yield* whileTheStepIsWritten(step.deltas("turn:1", [{ turn: 1, text: "Order 42 ", at: 0 }]))
      yield* Effect.sleep("50 millis")
      expect(followed).toEqual(["run.queued", "run.started", "model.turn.started", "model.delta"])
    }))

  it.scopedLive("text deltas of a turn whose end goes with the step are dropped: its answer carries the text", () =>
    Effect.gen(function*() {
      const { follow, followed, run, step } = yield* bufferedRun
      yield* follow
      yield* start(step, run)
      yield* step.deltas("turn:1", [{ turn: 1, text: "Order 42 ", at: 0 }])
      step.emit("model.turn.completed", "turn:1", {
        turn: 1,
        model: "demo",
        text: "Order 42 has shipped.",
        toolCalls: [],
        usage: { inputTokens: 1, outputTokens: 1, costUsd: null },
        durationMs: 0
      })
      yield* step.commit()
      yield* Effect.sleep("50 millis")
      expect(followed).toEqual(["run.queued", "run.started", "model.turn.started", "model.turn.completed"])
    }))

  it.scopedLive("a step handed on that the store refuses (the run ended elsewhere) fails the next commit, and no text delta goes out after it", () =>
    Effect.gen(function*() {
      const { cancelElsewhere, follow, followed, run, step, stored } = yield* bufferedRun
      yield* follow
      yield* start(step, run)
      yield* cancelElsewhere
      yield* Effect.sleep("50 millis")
      yield* step.deltas("turn:1", [{ turn: 1, text: "Order 42 ", at: 0 }])
      yield* Effect.sleep("50 millis")
      expect(followed).toEqual(["run.queued", "run.cancelled"])
      step.message({ _tag: "assistant", content: "", toolCalls: [{ id: "call-1", name: "lookup", arguments: "{}" }] })
      expect((yield* Effect.flip(step.commit()))._tag).toBe("LeaseLost")
      expect(yield* stored).toEqual({ status: "cancelled", messages: [] })
    }))

  it.scopedLive("a settled buffer writes a step handed on at once, not at the next turn of the loop, and once", () =>
    Effect.gen(function*() {
      const { run, step, stored, transactions } = yield* bufferedRun
      const before = yield* transactions
      yield* start(step, run)
      yield* step.settle
      expect(yield* stored).toEqual({ status: "running", messages: ["user"] })
      yield* Effect.sleep("50 millis")
      expect((yield* transactions) - before).toBe(1)
    }))

  it.scopedLive("a settled buffer writes the step handed on, not a model's answer that came after it", () =>
    Effect.gen(function*() {
      const { step, stored, transactions } = yield* bufferedRun
      yield* calledOnce(step)
      const before = yield* transactions
      // The call's result handed on, and the next turn's answer at once (its calls not yet run).
      step.message(tool)
      yield* step.commitSoon()
      step.message({ _tag: "assistant", content: "", toolCalls: [{ id: "call-2", name: "lookup", arguments: "{}" }] })
      yield* step.settle
      expect(yield* stored).toEqual({ status: "running", messages: ["user", "assistant", "tool"] })
      yield* Effect.sleep("50 millis")
      expect((yield* transactions) - before).toBe(1)
    }))

  it.scopedLive("an abandoned buffer writes nothing of a step it was handed", () =>
    Effect.gen(function*() {
      const { run, step, stored, transactions } = yield* bufferedRun
      const before = yield* transactions
      yield* start(step, run)
      yield* step.abandon
      yield* Effect.sleep("50 millis")
      expect(yield* stored).toEqual({ status: "queued", messages: [] })
      expect((yield* transactions) - before).toBe(0)
    }))

  it.scopedLive("a timer goes in with the step that holds its call's answer and wakes the scheduler; a step the store refuses arms none", () =>
    Effect.gen(function*() {
      const { activations, cancelElsewhere, run, step, stored } = yield* bufferedRun
      const changes = yield* activations.changes
      const timerIds = Effect.map(activations.list("agent"), (all) => all.map((timer) => timer.id))
      yield* calledOnce(step)
      step.timer(wakeUp(run, "agent:tmr_1"))
      step.message(tool)
      yield* step.commit()
      expect(yield* stored).toEqual({ status: "running", messages: ["user", "assistant", "tool"] })
      expect(yield* timerIds).toEqual(["agent:tmr_1"])
      expect(yield* Queue.size(changes)).toBe(1)
      // The run cancelled elsewhere: the next call's answer, and its timer, are fenced off together.
      yield* cancelElsewhere
      step.message({ _tag: "assistant", content: "", toolCalls: [{ id: "call-2", name: "foundry_sleep", arguments: "{}" }] })
      step.timer(wakeUp(run, "agent:tmr_2"))
      step.message({ _tag: "tool", toolCallId: "call-2", name: "foundry_sleep", content: "{\"id\":\"agent:tmr_2\"}" })
      expect((yield* Effect.flip(step.commit()))._tag).toBe("LeaseLost")
      expect(yield* timerIds).toEqual(["agent:tmr_1"])
    }))
})
