/**
 * A run that suspended for a build with its agent, checked after its suspension is stored: a build
 * made current while the suspension was written (whose replacement found the run still running,
 * so did not wake it) wakes it now; the build it waited on, or another still without its agent,
 * does not.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { wakeIfBuiltMeanwhile } from "../../src/dispatch/buildWaits.js"
import { runIn } from "../support/runInStatus.js"

const build = (...agents: ReadonlyArray<string>) => ({ agents: new Set(agents) })

/** Whether the run of `worker` that waited on `waitedOn` is woken with `now` current. */
const wokenWith = (waitedOn: ReturnType<typeof build>, now: ReturnType<typeof build>) =>
  Effect.gen(function*() {
    const woken: Array<string> = []
    yield* wakeIfBuiltMeanwhile({ get: Effect.succeed(now) }, (run) => Effect.sync(() => void woken.push(run.id)))(runIn("running"), waitedOn)
    return woken
  })

describe("a run suspended for a build with its agent", () => {
  it.effect("is woken when a build with its agent became current as it suspended", () =>
    Effect.gen(function*() {
      expect(yield* wokenWith(build("lead"), build("lead", "worker"))).toEqual(["run_1"])
    }))

  it.effect("is left waiting while the build it waited on is current, or a later one still without its agent", () =>
    Effect.gen(function*() {
      const waitedOn = build("lead")
      expect(yield* wokenWith(waitedOn, waitedOn)).toEqual([])
      expect(yield* wokenWith(waitedOn, build("lead", "other"))).toEqual([])
    }))
})
