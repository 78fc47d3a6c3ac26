/**
 * A run's answer as an OpenAI client gets it, from the run's events: the text of each turn whole
 * and once, whatever deltas it missed.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Context, Effect, Fiber, Layer, Stream } from "effect"
import * as ApprovalStorage from "../../src/durable/ApprovalStorage.js"
import { Store } from "../../src/durable/Store.js"
import * as EventLog from "../../src/events/EventLog.js"
import * as RunJournal from "../../src/journal/RunJournal.js"
import { runAnswer } from "../../src/transports/openai/runAnswer.js"
import { sqlite, storageLayer } from "../journal/backends.js"
import { completed, draft, newRun, submit } from "../journal/fixtures.js"

describe("a run's answer", () => {
  it.scopedLive("has each turn's whole text once when its deltas came with a gap, in the middle of a turn or at its start", () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(ApprovalStorage.layer.pipe(Layer.provideMerge(storageLayer(yield* sqlite.fresh))))
      const events = Context.get(context, EventLog.EventLog)
      const run = yield* submit(Context.get(context, RunJournal.RunJournal), newRun("r1"))
      const answer = yield* runAnswer(run.id, {
        events,
        store: Context.get(context, Store),
        approvals: Context.get(context, ApprovalStorage.ApprovalStorage)
      }).pipe(Stream.runCollect, Effect.fork)
      yield* Effect.sleep("100 millis")
      const delta = (turn: number, text: string, at: number) => draft(`d-${turn}-${at}`, run, { type: "model.delta", data: { turn, text, at } })
      const turn = (n: number, text: string) => [
        draft(`started-${n}`, run, { type: "model.turn.started", data: { turn: n, model: "demo" } }),
        draft(`completed-${n}`, run, {
          type: "model.turn.completed",
          data: { turn: n, model: "demo", text, toolCalls: [], usage: { inputTokens: 1, outputTokens: 1, costUsd: null }, durationMs: 1 }
        })
      ] as const
      // Turn 1 misses "lo" in its middle; turn 2 misses its first word ("Order" came before the follower did).
      const [started1, completed1] = turn(1, "Hello world")
      yield* events.emit(started1)
      yield* events.emitLive([delta(1, "Hel", 0)])
      yield* events.emitLive([delta(1, " world", 5)])
      yield* events.emit(completed1)
      const [started2, completed2] = turn(2, "Order 42 has shipped.")
      yield* events.emit(started2)
      yield* events.emitLive([delta(2, " 42", 5), delta(2, " has shipped.", 8)])
      yield* events.emit(completed2)
      yield* events.emit(draft("end", run, completed))
      const pieces = Chunk.toReadonlyArray(yield* Fiber.join(answer))
      const text = pieces.flatMap((piece) => piece._tag === "Text" ? [piece.text] : []).join("")
      expect(text).toBe("Hello world\n\nOrder 42 has shipped.")
      // Streamed where it could be: what came before the gap went at once.
      expect(pieces[0]).toEqual({ _tag: "Text", text: "Hel" })
      expect(pieces[pieces.length - 1]).toEqual({ _tag: "End", end: { _tag: "Completed" } })
    }))
})
