/**
 * Waking a run whose approval was decided: at once when it does not execute here; when it does,
 * only once that execution has ended, and only if the run is still suspended then (the execution
 * found the decision itself and went on, or let its lease go before the decision came).
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Option } from "effect"
import { makeWakeDecided } from "../../src/dispatch/wakeDecided.js"
import type { RunStatus } from "../../src/durable/records.js"
import { runIn } from "../support/runInStatus.js"


/** A wake for decided runs over an execution of `run_1` here that ends when told, the run stored as `stored` says then. */
const waking = (here: boolean) =>
  Effect.gen(function*() {
    const ended = yield* Deferred.make<void>()
    let executing = here
    let stored: RunStatus = "suspended"
    const woken: Array<RunStatus> = []
    const wakeDecided = makeWakeDecided({
      executions: {
        isHere: () => executing,
        awaitHere: () => Deferred.await(ended)
      },
      store: { getRun: () => Effect.sync(() => Option.some(runIn(stored))) },
      wake: (run) => Effect.sync(() => void woken.push(run.status)),
      scope: yield* Effect.scope
    })
    const end = (status: RunStatus) =>
      Effect.gen(function*() {
        stored = status
        executing = false
        yield* Deferred.succeed(ended, undefined)
        // The waiting fiber goes on.
        yield* Effect.yieldNow()
        yield* Effect.yieldNow()
      })
    return { wakeDecided, woken, end }
  })

describe("waking a run whose approval was decided", () => {
  it.scoped("a run that does not execute here is woken at once", () =>
    Effect.gen(function*() {
      const { wakeDecided, woken } = yield* waking(false)
      yield* wakeDecided(runIn("suspended"))
      expect(woken).toEqual(["suspended"])
    }))

  it.scoped("a run executing here is not woken while it executes (that would interrupt it); once it ends suspended, it is", () =>
    Effect.gen(function*() {
      const { end, wakeDecided, woken } = yield* waking(true)
      yield* wakeDecided(runIn("suspended"))
      expect(woken).toEqual([])
      yield* end("suspended")
      expect(woken).toEqual(["suspended"])
    }))

  it.scoped("a run executing here that found the decision itself and went on is not woken when its execution ends", () =>
    Effect.gen(function*() {
      const { end, wakeDecided, woken } = yield* waking(true)
      yield* wakeDecided(runIn("suspended"))
      yield* end("completed")
      expect(woken).toEqual([])
    }))
})
