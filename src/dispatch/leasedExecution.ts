/**
 * A run executed under its conversation's lease, the fence that keeps two processes on one
 * database from running one conversation at once: the lease its submission took, or one waited
 * for now (another process may hold it), renewed while held and given up when the execution ends,
 * however it ends. A child run that ends wakes the parent waiting for it.
 */
import { Cause, type Context, Duration, Effect, Option } from "effect"
import type { CompiledApp } from "../compiler/CompiledApp.js"
import { finalStatuses, RunRecord, type RunStatus } from "../durable/records.js"
import type { Store } from "../durable/Store.js"
import { StoreError } from "../durable/StoreError.js"
import { runAgent } from "../engine/AgentLoop.js"
import type { InLine, Lease } from "../journal/journalRecords.js"
import type { RunJournal } from "../journal/RunJournal.js"
import type { Releases } from "../release/Releases.js"
import { isDeadExecutor } from "./executorIdentity.js"
import { logLeaseTaken } from "./leaseTaken.js"

/** What executions need of their executor. */
export interface LeasedExecutionOptions {
  readonly journal: Context.Tag.Service<RunJournal>
  readonly store: Context.Tag.Service<Store>
  readonly releases: Context.Tag.Service<Releases>
  /** The executor's name, as it holds leases. */
  readonly owner: string
  /** How long a lease lasts unrenewed, in milliseconds. */
  readonly leaseTtl: number
  /** Renews a lease taken for a run until it is let go. */
  readonly hold: (lease: Lease, runId: string) => Effect.Effect<void>
  /** Stops renewing a lease and releases it. */
  readonly letGo: (lease: Lease) => Effect.Effect<void>
  /** Tells the approvals' expiry that a run now waits for one. */
  readonly asked: Effect.Effect<void>
  /** After an execution on `app` suspended the run for a build with its agent: wakes it if such a build is current by now. */
  readonly builtMeanwhile: (run: RunRecord, app: CompiledApp) => Effect.Effect<void>
  /** Wakes the run's parent if it waits for the run, now ended. */
  readonly wakeParent: (runId: string) => Effect.Effect<void>
  /**
   * Puts `ahead`, in their order, then `run` at the back of the conversation's lane here: `run`'s
   * execution, which found them ahead of it, ends.
   */
  readonly behind: (ahead: ReadonlyArray<RunRecord>, run: RunRecord) => Effect.Effect<void>
}

/** How the executor executes a run whose turn in its lane has come, with the lease its submission took, if any. */
export const makeLeasedExecution = (options: LeasedExecutionOptions) => {
  const { journal, leaseTtl, letGo, owner, releases, store } = options
  // Runs whose execution here crashed (a defect, not a failure the run records): not run again
  // ahead of the runs behind them, which would crash with them.
  const crashed = new Set<string>()

  /** Waits for the run's conversation lease (another process may be running it), and reads where the run stands with it. */
  const claim = (run: RunRecord): Effect.Effect<{ readonly lease: Lease; readonly inLine: InLine }> =>
    journal.claim(run, owner, leaseTtl, isDeadExecutor).pipe(
      Effect.orDie,
      Effect.flatMap((claimed) =>
        claimed._tag === "Claimed"
          ? Effect.succeed(claimed)
          // Another executor holds it: try again once its lease would expire unrenewed (by the clock
          // leases are judged by, which on PostgreSQL is not this process's).
          : Effect.zipRight(Effect.sleep(Duration.millis(Math.min(Math.max(claimed.expiresIn + 5, 5), leaseTtl))), claim(run)))
    )

  /** Executes `run`, whose status is stored as `status` now, under `lease`: unless another process (or a cancel) moved it on meanwhile. */
  const underLease = (lease: Lease, run: RunRecord, status: RunStatus) => {
    if (finalStatuses.has(status)) return Effect.void
    if (status === "suspended" && run.status !== "suspended") return Effect.void
    const latest = status === run.status ? run : new RunRecord({ ...run, status }, { disableValidation: true })
    return releases.forRun(run, (app) =>
      Effect.gen(function*() {
        const outcome = yield* runAgent(app, latest, lease).pipe(
          // Its lease taken (a cancel from another process): the step that found it so wrote nothing.
          Effect.catchTag("LeaseLost", () => Effect.as(logLeaseTaken(store, run.id), undefined))
        )
        if (outcome !== "suspended") return
        yield* options.asked
        // Suspended without its agent: waiting for a build that has it.
        if (!app.agents.has(run.agent)) yield* options.builtMeanwhile(latest, app)
      }))
  }

  /** A child run's parent waits for it: after its execution, the parent goes on if it has ended. */
  const isChild = (run: RunRecord) => run.parentRunId !== null && run.parentToolCallId !== null

  /**
   * Executes the run under `lease` where it stands. The runs of its conversation accepted before it
   * that have not run yet (another process queued them, or left them running when it stopped) go
   * first, so that a conversation's runs execute in the order they were accepted wherever they were
   * sent: they are put in this process's lane, each an execution of its own, and the run behind
   * them, this execution ending (and its lease let go). Whoever else holds them finds them ended. A
   * run whose execution here crashed is not waited for (it waits for a restart, as before).
   */
  const inTurn = (lease: Lease, run: RunRecord, inLine: InLine) => {
    const ahead = inLine.ahead.filter((runId) => !crashed.has(runId))
    if (ahead.length === 0) return underLease(lease, run, inLine.status)
    return Effect.flatMap(
      Effect.forEach(ahead, (runId) => Effect.orDie(store.getRun(runId))),
      (found) => options.behind(found.flatMap((earlier) => Option.isSome(earlier) ? [earlier.value] : []), run)
    )
  }

  /**
   * Executes the run (its conversation's earlier runs here are done, and it has a slot) under the
   * conversation's lease: `claimed` when the submission took it (held, so renewed, since), else
   * taken now, so that it is renewed from the moment it is held; either way with where the run
   * stands as stored now. Whichever lease it is, it is given up when the execution ends, however
   * it ends (a step may have released it already).
   */
  return (run: RunRecord, claimed: Lease | undefined) => {
    // Executed again (adopted, or after a restart of its conversation's line): its place is its own.
    crashed.delete(run.id)
    let lease = claimed
    const leased = claimed === undefined
      ? Effect.flatMap(claim(run), (claimedNow) => {
        lease = claimedNow.lease
        return Effect.zipRight(options.hold(claimedNow.lease, run.id), inTurn(claimedNow.lease, run, claimedNow.inLine))
      })
      // Queued with the lease, the run may have been cancelled since (from another process).
      : Effect.flatMap(Effect.orDie(journal.inLine(run)), (inLine) => inLine === undefined ? Effect.void : inTurn(claimed, run, inLine))
    const ended = Effect.ensuring(leased, Effect.suspend(() => lease === undefined ? Effect.void : letGo(lease)))
    return (isChild(run) ? Effect.zipRight(ended, options.wakeParent(run.id)) : ended).pipe(
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.void
          : Effect.zipRight(
            // A store that failed is not the run's defect: the run keeps its place.
            Effect.sync(() => Cause.squash(cause) instanceof StoreError ? undefined : crashed.add(run.id)),
            Effect.logError("run execution crashed", cause)
          ))
    )
  }
}
