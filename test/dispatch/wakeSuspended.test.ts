/**
 * Waking a suspended run whose approval was decided or whose child ended: at once when it does not
 * execute here; when it does, only once that execution has ended, and only if the run is still
 * suspended then (the execution found the news itself and went on, or let its lease go before the
 * news came).
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Option } from "effect"
import { makeWakeSuspended } from "../../src/dispatch/wakeSuspended.js"
import type { RunStatus } from "../../src/durable/records.js"
import { runIn } from "../support/runInStatus.js"

/** A wake for suspended runs over an execution of `run_1` here that ends when told, the run stored as `stored` says then. */
const waking = (here: boolean) =>
  Effect.gen(function*() {
    const ended = yield* Deferred.make<void>()
    let executing = here
    let stored: RunStatus = "suspended"
    // Suspended again on something else (another approval, another child) when its execution ended.
    let waitsOnSomething = false
    const woken: Array<RunStatus> = []
    let reads = 0
    const wakeSuspended = makeWakeSuspended({
      executions: {
        isHere: () => executing,
        awaitHere: () => Deferred.await(ended)
      },
      store: {
        readyToResume: () =>
          Effect.sync(() => {
            reads++
            return stored === "suspended" && !waitsOnSomething ? Option.some(runIn(stored)) : Option.none()
          })
      },
      wake: (run) => Effect.sync(() => void woken.push(run.status)),
      scope: yield* Effect.scope
    })
    const end = (status: RunStatus, waiting = false) =>
      Effect.gen(function*() {
        stored = status
        waitsOnSomething = waiting
        executing = false
        yield* Deferred.succeed(ended, undefined)
        // The waiting fiber goes on.
        yield* Effect.yieldNow()
        yield* Effect.yieldNow()
      })
    return { wakeSuspended, woken, end, reads: () => reads }
  })

describe("waking a suspended run whose approval was decided or whose child ended", () => {
  it.scoped("a run that does not execute here is woken at once", () =>
    Effect.gen(function*() {
      const { wakeSuspended, woken } = yield* waking(false)
      yield* wakeSuspended(runIn("suspended"))
      expect(woken).toEqual(["suspended"])
    }))

  it.scoped("a run executing here is not woken while it executes (that would interrupt it); once it ends suspended, it is", () =>
    Effect.gen(function*() {
      const { end, wakeSuspended, woken } = yield* waking(true)
      yield* wakeSuspended(runIn("suspended"))
      expect(woken).toEqual([])
      yield* end("suspended")
      expect(woken).toEqual(["suspended"])
    }))

  it.scoped("wakes of a run during one execution here are answered by one look once it ends, one wake", () =>
    Effect.gen(function*() {
      const { end, reads, wakeSuspended, woken } = yield* waking(true)
      // A decision, then a cluster's sweep every second while the run waits in a lane here.
      for (let i = 0; i < 5; i++) yield* wakeSuspended(runIn("suspended"))
      yield* end("suspended")
      expect(woken).toEqual(["suspended"])
      expect(reads()).toBe(1)
    }))

  it.scoped("a wake that comes while the look after an execution reads, the run executing here again, waits for that execution too", () =>
    Effect.gen(function*() {
      const ended = [yield* Deferred.make<void>(), yield* Deferred.make<void>()] as const
      let execution = 0
      let executing = true
      let awaited = 0
      const reading = yield* Deferred.make<void>()
      const readGoesOn = yield* Deferred.make<void>()
      const woken: Array<string> = []
      const wakeSuspended = makeWakeSuspended({
        executions: {
          isHere: () => executing,
          awaitHere: () => {
            awaited++
            return Deferred.await(execution === 0 ? ended[0] : ended[1])
          }
        },
        store: {
          // The first look waits until told.
          readyToResume: () =>
            Effect.gen(function*() {
              if (yield* Deferred.succeed(reading, undefined)) yield* Deferred.await(readGoesOn)
              return Option.some(runIn("suspended"))
            })
        },
        wake: (run) => Effect.sync(() => void woken.push(run.id)),
        scope: yield* Effect.scope
      })
      yield* wakeSuspended(runIn("suspended"))
      executing = false
      yield* Deferred.succeed(ended[0], undefined)
      yield* Deferred.await(reading)
      // Scheduled here again meanwhile, by another wake; then one more comes.
      execution = 1
      executing = true
      yield* wakeSuspended(runIn("suspended"))
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
      expect(awaited).toBe(2)
      yield* Deferred.succeed(readGoesOn, undefined)
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
      expect(woken).toEqual([])
      executing = false
      yield* Deferred.succeed(ended[1], undefined)
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
      expect(woken).toEqual(["run_1"])
    }))

  it.scoped("a run executing here that found the news itself and went on is not woken when its execution ends", () =>
    Effect.gen(function*() {
      const { end, wakeSuspended, woken } = yield* waking(true)
      yield* wakeSuspended(runIn("suspended"))
      yield* end("completed")
      expect(woken).toEqual([])
    }))

  it.scoped("a run executing here that went on and suspended again on something else is not woken when its execution ends", () =>
    Effect.gen(function*() {
      const { end, wakeSuspended, woken } = yield* waking(true)
      yield* wakeSuspended(runIn("suspended"))
      yield* end("suspended", true)
      expect(woken).toEqual([])
    }))
})
