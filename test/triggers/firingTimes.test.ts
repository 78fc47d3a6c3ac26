/**
 * Which due firings of a schedule start runs: a timer held up while it ran runs the latest of
 * those due (never none), firings due before the timer began or later than the grace are misfires
 * and go by the schedule's policy.
 */
import { describe, expect, it } from "@effect/vitest"
import { firingTimes } from "../../src/triggers/firingTimes.js"

const second = 1_000
const minute = 60 * second
// An `every: "5 seconds"` schedule whose timer began at 0.
const timerStartedAt = 0

describe("firingTimes", () => {
  it("a timer held up 6 s while it ran (two firings due, within the grace) runs the latest, whatever the misfire policy", () => {
    const moment = { scheduled: 5 * second, due: [5 * second, 10 * second], now: 11 * second, graceMillis: minute, timerStartedAt }
    for (const misfire of ["skip", "run-once", "catch-up"] as const) {
      expect(firingTimes(misfire, moment, 10), misfire).toEqual([10 * second])
    }
  })

  it("one firing due within the grace runs for its own time", () => {
    expect(firingTimes("skip", { scheduled: 5 * second, due: [5 * second], now: 50 * second, graceMillis: minute, timerStartedAt }, 10)).toEqual([5 * second])
  })

  it("firings that fell due before the timer began (no server ran) are misfires, even within the grace", () => {
    const moment = { scheduled: 5 * second, due: [5 * second, 10 * second], now: 12 * second, graceMillis: minute, timerStartedAt: 12 * second }
    expect(firingTimes("skip", moment, 10)).toEqual([])
    expect(firingTimes("run-once", moment, 10)).toEqual([10 * second])
    expect(firingTimes("catch-up", moment, 10)).toEqual([5 * second, 10 * second])
  })

  it("a firing later than the grace is a misfire, and catch-up runs at most the limit's latest", () => {
    const due = Array.from({ length: 15 }, (_, i) => (i + 1) * minute)
    const moment = { scheduled: minute, due, now: 16 * minute, graceMillis: minute, timerStartedAt }
    expect(firingTimes("skip", moment, 10)).toEqual([])
    expect(firingTimes("run-once", moment, 10)).toEqual([15 * minute])
    expect(firingTimes("catch-up", moment, 10)).toEqual(due.slice(-10))
  })
})
