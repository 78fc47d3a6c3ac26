/**
 * A timer tool call run again (after a crash, or after a step the store did not take, the journal
 * runs a call whose result it did not record once more) finds the timer it armed: no second timer,
 * and no refusal for the limit its own timer reaches. Activations are stored in SQLite.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { ActivationStorage, layer as activationStorage } from "../../src/durable/ActivationStorage.js"
import { RunRecord } from "../../src/durable/records.js"
import { runTimerTool, type TimerLimits } from "../../src/engine/agentTimers.js"
import { sqliteStore } from "../support/sqliteStore.js"

const store = () => activationStorage.pipe(Layer.provide(sqliteStore("timer-calls").layer))

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

describe("a timer tool call run again", () => {
  it.effect("finds the timer it armed: one timer, the same answer", () =>
    Effect.gen(function*() {
      const sleep = { for: "1 hour", message: "wake up" }
      const first = yield* runTimerTool("sleep", sleep, run, "call_1", limits)
      const again = yield* runTimerTool("sleep", sleep, run, "call_1", limits)
      expect(first.outcome._tag).toBe("Succeeded")
      expect(again).toEqual(first)
      const timers = yield* (yield* ActivationStorage).list("agent")
      expect(timers).toHaveLength(1)
      // Another call is another timer: here, one over the instance's limit.
      const other = yield* runTimerTool("schedule", { in: "2 hours", message: "later" }, run, "call_2", limits)
      expect(other).toMatchObject({ outcome: { _tag: "Failed", error: expect.stringContaining("maxPendingPerInstance") }, armed: undefined })
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

  it.effect("answers as it did even once the timer's time has passed", () =>
    Effect.gen(function*() {
      // The clock is the TestClock, at 0: a wake-up ten seconds in.
      const sleep = { until: new Date(10_000).toISOString(), message: "wake up" }
      const first = yield* runTimerTool("sleep", sleep, run, "call_1", limits)
      expect(first.outcome._tag).toBe("Succeeded")
      yield* TestClock.adjust("20 seconds")
      expect(yield* runTimerTool("sleep", sleep, run, "call_1", limits)).toEqual(first)
    }).pipe(Effect.provide(store())))
})
