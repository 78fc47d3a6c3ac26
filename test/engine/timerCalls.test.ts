/**
 * A timer tool call answers with the change it makes to its instance's timers, and stores none
 * itself: the change goes in with the step that stores the answer (the journal's), so a call that
 * is never answered (its run cancelled, its step refused) leaves the timers as they were. Run again
 * (after a crash, or a step the store did not take), a call names the same timer. Activations are
 * stored in SQLite.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { ActivationStorage, layer as activationStorage } from "../../src/durable/ActivationStorage.js"
import { RunRecord } from "../../src/durable/records.js"
import { runTimerTool, type TimerLimits } from "../../src/engine/agentTimers.js"
import { sqliteStore } from "../support/sqliteStore.js"

const store = () => activationStorage.pipe(Layer.provideMerge(sqliteStore("timer-calls").layer))

const run = new RunRecord({
  id: "run_1",
  agent: "assistant",
  instanceId: "default",
  conversationId: "cnv_1",
  status: "running",
  input: "remind me",
  output: null,
  error: null,
  createdAt: 0,
  startedAt: 0,
  finishedAt: null
})

// One timer per instance at most: the call run again must not be refused by its own timer.
const limits: TimerLimits = { minInterval: "1 minute", maxPendingPerInstance: 1 }

describe("a timer tool call", () => {
  it.effect("answers with the timer it arms, stores nothing itself, and names the same timer when run again", () =>
    Effect.gen(function*() {
      const activations = yield* ActivationStorage
      const sleep = { for: "1 hour", message: "wake up" }
      const first = yield* runTimerTool("sleep", sleep, run, "call_1", limits)
      expect(first.outcome._tag).toBe("Succeeded")
      expect(first.change).toMatchObject({ _tag: "Save", activation: { id: first.armed?.id, kind: "agent", status: "active" } })
      expect(first.outcome._tag === "Succeeded" ? first.outcome.content : "").toContain(first.armed?.id)
      expect(yield* activations.list("agent")).toEqual([])
      expect(yield* runTimerTool("sleep", sleep, run, "call_1", limits)).toEqual(first)
      // Stored as its step stores it: the call run again is not refused by its own timer, but
      // another call is another timer, here one over the instance's limit.
      if (first.change?._tag === "Save") yield* activations.write({ saves: [first.change.activation] })
      expect(yield* runTimerTool("sleep", sleep, run, "call_1", limits)).toEqual(first)
      const other = yield* runTimerTool("schedule", { in: "2 hours", message: "later" }, run, "call_2", limits)
      expect(other).toMatchObject({ outcome: { _tag: "Failed", error: expect.stringContaining("maxPendingPerInstance") }, armed: undefined, change: undefined })
    }).pipe(Effect.provide(store())))

  it.effect("pauses and cancels a stored timer by the change its answer goes with, not by itself", () =>
    Effect.gen(function*() {
      const activations = yield* ActivationStorage
      const armed = yield* runTimerTool("schedule", { every: "1 day", message: "daily" }, run, "call_1", limits)
      if (armed.change?._tag !== "Save") return yield* Effect.dieMessage("no timer armed")
      yield* activations.write({ saves: [armed.change.activation] })
      const id = armed.change.activation.id
      const paused = yield* runTimerTool("schedules", { action: "pause", id }, run, "call_2", limits)
      // The status alone, on the timer as stored when the step is written: not the whole timer as read here.
      expect(paused.change).toEqual({ _tag: "SetStatus", id, status: "paused", nextFire: armed.change.activation.nextFire })
      const cancelled = yield* runTimerTool("schedules", { action: "cancel", id }, run, "call_3", limits)
      expect(cancelled.change).toEqual({ _tag: "Remove", id })
      expect((yield* activations.list("agent")).map((timer) => timer.status)).toEqual(["active"])
    }).pipe(Effect.provide(store())))

  it.effect("a time the model gives wrong is a readable refusal, never a crash of the run", () =>
    Effect.gen(function*() {
      const refusal = (which: "sleep" | "schedule" | "schedules", input: unknown, call: string) =>
        Effect.map(runTimerTool(which, input, run, call, limits), ({ outcome }) => outcome._tag === "Failed" ? outcome.error : `not refused: ${outcome.content}`)
      expect(yield* refusal("sleep", { for: "99999999 weeks", message: "m" }, "c1")).toBe(`for "99999999 weeks" is further ahead than any date`)
      expect(yield* refusal("sleep", { for: "20", message: "m" }, "c2")).toBe(`for "20" is not a duration: give it with a unit, e.g. "30 minutes" or "2 days"`)
      expect(yield* refusal("sleep", { until: "tomorrow", message: "m" }, "c3")).toContain(`until "tomorrow" is not an ISO time`)
      expect(yield* refusal("schedule", { in: "banana", message: "m" }, "c4")).toContain(`in "banana" is not a duration`)
      expect(yield* refusal("schedules", { action: "cancel" }, "c5")).toBe(`cancel needs the id of one of your schedules (action "list" shows them)`)
    }).pipe(Effect.provide(store())))

  it.effect("arms a timer whose interval has a fraction of a millisecond for a whole millisecond, as the store keeps times", () =>
    Effect.gen(function*() {
      const armed = yield* runTimerTool("schedule", { every: "60000.5 millis", message: "tick" }, run, "call_1", limits)
      expect(armed.change?._tag === "Save" ? Number.isInteger(armed.change.activation.nextFire) : "no timer").toBe(true)
    }).pipe(Effect.provide(store())))
})
