/**
 * Runs that wait for a build with their agent. A run checked after its suspension is stored: a
 * build made current while the suspension was written (whose replacement found the run still
 * running, so did not wake it) wakes it now; the build it waited on, or another still without its
 * agent, does not. And the waits a reload ends: a build made current as the dispatcher starts
 * listening for builds is not missed.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { wakeIfBuiltMeanwhile, wakeOnBuilds } from "../../src/dispatch/buildWaits.js"
import { runIn } from "../support/runInStatus.js"

const build = (...agents: ReadonlyArray<string>) => ({ agents: new Set(agents) })

/** A build of a project whose `worker` agent's file does not build. */
const withoutWorker = {
  agents: new Set(["lead"]),
  leftOut: [{ kind: "agent", id: "worker", file: "agents/worker/agent.ts", problem: "half saved" }] as const
}

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

/**
 * The runs woken while the dispatcher listens for builds, the run of `worker` suspended, the build
 * read first leaving `worker` out and `changes` the builds the listening finds.
 */
const wokenByReloads = (...changes: ReadonlyArray<typeof withoutWorker | ReturnType<typeof build>>) =>
  Effect.gen(function*() {
    const woken: Array<string> = []
    yield* wakeOnBuilds(
      { get: Effect.succeed(withoutWorker), changes: Stream.fromIterable(changes) },
      { suspendedReadyToResume: Effect.succeed([runIn("suspended")]) },
      (run) => Effect.sync(() => void woken.push(run.id))
    )
    // The listening is a fiber of its own: let it take what it was given.
    for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
    return woken
  })

describe("runs waiting for a build with their agent, woken by a reload", () => {
  it.scoped("a build with the agent made current between the dispatcher's first look and its listening still wakes them", () =>
    Effect.gen(function*() {
      // Read without the agent; by the time the builds are listened to, one with it is current.
      expect(yield* wokenByReloads(build("lead", "worker"))).toEqual(["run_1"])
    }))

  it.scoped("a build still without the agent wakes none", () =>
    Effect.gen(function*() {
      expect(yield* wokenByReloads(withoutWorker, build("lead", "other"))).toEqual([])
    }))
})
