/**
 * Runs that wait for a build with their agent (engine/waitForBuild.ts): left alone by recovery
 * and the cluster's sweep while the serving build still leaves their agent out (each wake would
 * only suspend them again), and woken as soon as a build that has it becomes current. A build made
 * current while such a run's suspension is written finds the run not yet suspended: the run reads
 * the current build after its suspension is stored, so one of the two sees the other.
 */
import { Effect, Stream } from "effect"
import { type CompiledApp, leftOutOf } from "../compiler/CompiledApp.js"
import type { RunRecord } from "../durable/records.js"
import type { Store } from "../durable/Store.js"

/** What a build says of its agents, all these wakes read. */
type WithAgents = { readonly agents: Pick<CompiledApp["agents"], "has"> } & Pick<CompiledApp, "leftOut">

const agentsLeftOut = (app: WithAgents): ReadonlySet<string> => new Set(leftOutOf(app, "agent").map((route) => route.id))

/** Whether a run of `agent` can go on with `app`: it does not leave the agent out. */
export const goesOnWith = (app: CompiledApp): (agent: string) => boolean => {
  const leftOut = agentsLeftOut(app)
  return (agent) => !leftOut.has(agent)
}

/** The runs of `runs` that can go on with `app`: those whose agent it does not leave out. */
export const notWaitingForBuild = (app: CompiledApp, runs: ReadonlyArray<RunRecord>): ReadonlyArray<RunRecord> => {
  const goesOn = goesOnWith(app)
  return runs.filter((run) => goesOn(run.agent))
}

/**
 * Wakes, in the current scope, the suspended runs that wait on nothing of an agent the build
 * before left out, each time a build that has that agent becomes current.
 */
export const wakeOnBuilds = (
  current: { readonly get: Effect.Effect<WithAgents>; readonly changes: Stream.Stream<WithAgents> },
  store: Pick<typeof Store.Service, "suspendedReadyToResume">,
  wake: (run: RunRecord) => Effect.Effect<void>
) =>
  Effect.gen(function*() {
    // Compared with each build from the one current as the stream starts, which may be newer.
    let leftOutBefore = agentsLeftOut(yield* current.get)
    yield* current.changes.pipe(
      Stream.runForEach((app) => {
        const back = new Set([...leftOutBefore].filter((agent) => app.agents.has(agent)))
        leftOutBefore = agentsLeftOut(app)
        if (back.size === 0) return Effect.void
        return store.suspendedReadyToResume.pipe(
          Effect.flatMap((runs) => Effect.forEach(runs.filter((run) => back.has(run.agent)), wake, { discard: true })),
          Effect.catchAllCause((cause) => Effect.logWarning("could not wake the runs that waited for a build with their agent", cause))
        )
      }),
      Effect.forkScoped
    )
  })

/**
 * After a run's execution on `app` suspended it for a build with its agent: wakes it if a build
 * that has the agent is current by now (its replacement may have found the run still running).
 */
export const wakeIfBuiltMeanwhile = (
  current: { readonly get: Effect.Effect<WithAgents> },
  wake: (run: RunRecord) => Effect.Effect<void>
) =>
(run: RunRecord, app: WithAgents): Effect.Effect<void> =>
  Effect.flatMap(current.get, (now) => now !== app && now.agents.has(run.agent) ? wake(run) : Effect.void)
