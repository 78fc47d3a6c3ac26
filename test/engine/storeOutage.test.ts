/**
 * How long a run's execution waits out a store that does not take its steps: attempts at once,
 * then after 200 ms doubling to every 5 s, for a minute of one outage; a step written between two
 * failures starts a new outage with the whole wait again. Time is the `TestClock`'s.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import { StoreError } from "../../src/durable/StoreError.js"
import { outlastStoreOutages } from "../../src/engine/storeOutage.js"

const down = new StoreError({ operation: "write", message: "connection terminated" })

/** Advances the test clock a second at a time until `fiber` is done; the times the attempts came at. */
const runToEnd = <A, E>(fiber: Fiber.RuntimeFiber<A, E>) =>
  Effect.gen(function*() {
    for (let second = 0; second < 600 && fiber.unsafePoll() === null; second++) yield* TestClock.adjust("1 second")
    return yield* Fiber.join(fiber)
  })

describe("outlasting a store outage", () => {
  it.effect("a store that stays down is waited out for a minute, sooner at first, then given up", () =>
    Effect.gen(function*() {
      const at: Array<number> = []
      const fiber = yield* Effect.fork(outlastStoreOutages({
        runId: "run_1",
        attempt: Effect.flatMap(TestClock.currentTimeMillis, (now) => {
          at.push(now)
          return Effect.fail(down)
        }),
        written: () => 0,
        giveUp: (error) => Effect.succeed(`given up: ${error.message}`)
      }))
      const result = yield* runToEnd(fiber)
      expect(result).toBe("given up: connection terminated")
      // At once, again at once, then waits of 200 ms doubling to 5 s, until a minute has passed.
      const waits = at.slice(1).map((time, i) => time - at[i]!)
      expect(waits.slice(0, 8)).toEqual([0, 200, 400, 800, 1600, 3200, 5000, 5000])
      expect(new Set(waits.slice(6))).toEqual(new Set([5000]))
      const lasted = at[at.length - 1]! - at[0]!
      // The last attempt is the first to fail after a minute.
      expect(lasted).toBeGreaterThanOrEqual(60_000)
      expect(lasted).toBeLessThan(65_000)
    }))

  it.effect("a step written between failures starts a new outage: a run that keeps going is not given up", () =>
    Effect.gen(function*() {
      let written = 0
      let attempts = 0
      const fiber = yield* Effect.fork(outlastStoreOutages({
        runId: "run_2",
        // Each attempt writes a step, works 40 s, and meets the store down again; the tenth completes.
        attempt: Effect.suspend(() => {
          attempts++
          written++
          return attempts === 10 ? Effect.succeed("completed") : Effect.zipRight(Effect.sleep("40 seconds"), Effect.fail(down))
        }),
        written: () => written,
        giveUp: () => Effect.succeed("given up")
      }))
      expect(yield* runToEnd(fiber)).toBe("completed")
      expect(attempts).toBe(10)
    }))

  it.effect("an error that is not the store's is not waited out", () =>
    Effect.gen(function*() {
      let attempts = 0
      const result = yield* outlastStoreOutages({
        runId: "run_3",
        attempt: Effect.suspend(() => {
          attempts++
          return Effect.fail({ _tag: "LeaseLost" as const })
        }),
        written: () => 0,
        giveUp: () => Effect.succeed("given up")
      }).pipe(Effect.flip)
      expect(result).toEqual({ _tag: "LeaseLost" })
      expect(attempts).toBe(1)
    }))
})
