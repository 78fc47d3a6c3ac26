/**
 * What the log says when a run stops in a process because its conversation's lease was taken: the
 * run as stored says whether it ended elsewhere (a cancel from another process: news) or goes on
 * with another executor (a takeover: a warning). The cancel's line as a real process logs it is in
 * `execution.test.ts`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { logLeaseTaken } from "../../src/dispatch/leaseTaken.js"
import { eventOf } from "../../src/journal/trace.js"
import { freshStorage, sqlite } from "../journal/backends.js"
import { newRun, submit } from "../journal/fixtures.js"
import { logLines } from "../support/logLines.js"

describe("logLeaseTaken", () => {
  it.scoped("a run another executor took over is a warning that the lease's holder goes on with it", () =>
    Effect.gen(function*() {
      const { journal, store } = yield* freshStorage(sqlite)
      yield* TestClock.setTime(1_000)
      const run = yield* submit(journal, newRun("r1"))
      yield* journal.claim(run, "A", 60_000)
      yield* journal.claim(run, "B", 60_000, (holder) => holder === "A")
      const lines = yield* logLines
      yield* logLeaseTaken(store, "r1")
      expect(lines).toEqual([
        "run r1: another executor took over its conversation's lease from this process (this process was thought stopped, or did not renew the lease in time): the run stopped here, and the lease's holder goes on with it"
      ])
    }))

  it.scoped("a run cancelled elsewhere says it ended there, and how", () =>
    Effect.gen(function*() {
      const { journal, store } = yield* freshStorage(sqlite)
      yield* TestClock.setTime(1_000)
      const run = yield* submit(journal, newRun("r1"))
      yield* journal.claim(run, "A", 60_000)
      yield* journal.record(run, { events: [eventOf(run, "run.cancelled", { from: "running" })], status: { status: "cancelled" }, revokeLeaseFor: "B" })
      const lines = yield* logLines
      yield* logLeaseTaken(store, "r1")
      expect(lines).toEqual([
        "run r1 ended elsewhere (cancelled) while this process held its conversation's lease: the run stopped here, having written nothing after that end"
      ])
    }))
})
