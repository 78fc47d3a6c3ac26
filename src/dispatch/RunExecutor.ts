/**
 * Executing runs in this process: one serial lane per conversation, a global concurrency limit,
 * every execution a fiber in the executor's scope (interrupted on shutdown, so the run stays
 * `running` in the store and is resumed later). A conversation lease with a fencing token in the
 * store keeps two processes on one database from running one conversation at once.
 *
 * Both dispatchers are made of it; they differ in where a run goes to be executed (`wake`): the
 * local dispatcher puts it in this process's lane, the cluster dispatcher sends it to the runner
 * that owns its conversation. How runs get in is `submissions.ts`, how one executes under its
 * conversation's lease `leasedExecution.ts`, how runs are cancelled and steered
 * `cancellations.ts`; approvals, recovery and the adoption of a stopped process's runs (those in
 * flight, and the suspended ones it left waiting) are here.
 */
import type { Environments } from "../environments/Environments.js"
import { Context, Duration, Effect, type Fiber, Option, Runtime } from "effect"
import { CurrentApp } from "../compiler/CurrentApp.js"
import type { ActivationStorage } from "../durable/ActivationStorage.js"
import type { ApprovalStorage } from "../durable/ApprovalStorage.js"
import { InstanceStorage } from "../durable/InstanceStorage.js"
import { finalStatuses, type RunRecord } from "../durable/records.js"
import { Store } from "../durable/Store.js"
import { RunStarter } from "../engine/RunStarter.js"
import type { Instances } from "../instances/Instances.js"
import type { EventLog } from "../events/EventLog.js"
import type { Lease } from "../journal/journalRecords.js"
import { RunJournal } from "../journal/RunJournal.js"
import { ModelResolver } from "../models/Model.js"
import { Releases } from "../release/Releases.js"
import { makeApprovalDecisions } from "./approvalDecisions.js"
import { goesOnWith, wakeIfBuiltMeanwhile, wakeOnBuilds } from "./buildWaits.js"
import { makeCancellations } from "./cancellations.js"
import { type ApprovalScope, RunNotFound } from "./Dispatcher.js"
import type { Place } from "./executionQueue.js"
import { makeExecutions } from "./executions.js"
import { isDeadExecutor, isLiveExecutor, makeExecutorName } from "./executorIdentity.js"
import { makeInstanceRefusals } from "./instanceRefusals.js"
import { makeHeldLeases } from "./heldLeases.js"
import { logLeaseTaken } from "./leaseTaken.js"
import { makeLeasedExecution } from "./leasedExecution.js"
import { makeSubmissions } from "./submissions.js"
import { makeWakeSuspended } from "./wakeSuspended.js"

/** Settings of an executor. */
export interface RunExecutorOptions {
  /** Runs executing at once, across conversations. */
  readonly concurrency: number
  /** How long a conversation lease lasts without renewal: the wait before a crashed holder's work is taken over. */
  readonly leaseTtl?: Duration.DurationInput
  /** Where a run goes to be executed; this process's lane when absent. */
  readonly wake?: (run: RunRecord) => Effect.Effect<void>
}

/** Makes an executor in the current scope. */
export const makeRunExecutor = (options: RunExecutorOptions) =>
  Effect.gen(function*() {
    const store = yield* Store
    const journal = yield* RunJournal
    const current = yield* CurrentApp
    const releases = yield* Releases
    const instances = yield* InstanceStorage
    const context = yield* Effect.context<Store | ActivationStorage | ApprovalStorage | InstanceStorage | Instances | Environments | RunJournal | EventLog | ModelResolver>()
    const owner = yield* makeExecutorName
    // Where runs go: this process's lane unless told otherwise (declared before `schedule`, used after).
    const wake = (run: RunRecord): Effect.Effect<void> => options.wake === undefined ? schedule(run) : options.wake(run)
    const leaseTtl = Duration.toMillis(Duration.decode(options.leaseTtl ?? "3 seconds"))
    const runtime = yield* Effect.runtime<never>()
    const executions = yield* makeExecutions({
      concurrency: options.concurrency,
      // Started from the scheduler, not inside whoever left the place before it.
      fork: (run, claimed): Fiber.RuntimeFiber<void> => forkExecution(execute(run, claimed), { immediate: false }),
      letGo: (lease): Effect.Effect<void> => letGo(lease)
    })

    // A lease its renewal finds taken (a cancel from another process): the execution stops, and the
    // log says why. What it asked for since is in steps that lease fenced off, so nothing of it was stored.
    const { hold, letGo } = yield* makeHeldLeases(journal, leaseTtl, (runId) => Effect.zipRight(executions.stop(runId), logLeaseTaken(store, runId)))

    /**
     * Puts the run at the back of its conversation's lane, or at the `place` its submission took
     * with `claimed`, the conversation's lease (`undefined` when another executor held it).
     */
    const schedule = (run: RunRecord, submitted?: { readonly place: Place; readonly claimed: Lease | undefined }): Effect.Effect<void> =>
      // Held from before it can start: an execution that ends lets go of a lease already held.
      Effect.zipRight(submitted?.claimed === undefined ? Effect.void : hold(submitted.claimed, run.id), executions.schedule(run, submitted))

    const findRun = (runId: string) =>
      store.getRun(runId).pipe(
        Effect.flatMap(Option.match({
          onNone: () => Effect.fail(new RunNotFound({ runId, message: `there is no run "${runId}"` })),
          onSome: Effect.succeed
        }))
      )

    const refusals = makeInstanceRefusals(instances)

    const submissions = makeSubmissions({
      store,
      journal,
      current,
      releases,
      models: Context.get(context, ModelResolver),
      executions,
      refusals,
      owner,
      leaseTtl,
      wake: options.wake,
      schedule
    })

    // What every execution runs with: the services, and how it starts child runs. Forked from the
    // executor's runtime, not from whoever submitted the run: an execution outlives its submitter.
    const forkExecution = Runtime.runFork(Runtime.make({
      context: Context.add(context, RunStarter, submissions.starter),
      fiberRefs: runtime.fiberRefs,
      // Interruptible whatever region the executor was made in: cancels and shutdown interrupt executions.
      runtimeFlags: Runtime.defaultRuntime.runtimeFlags
    }))

    const scope = yield* Effect.scope
    // Not `wake`: a run still executing here reads what it waits for itself (and would be interrupted).
    const wakeSuspended = makeWakeSuspended({ executions, store, wake, scope })
    // The same, executing it here whatever `wake` says: where a cluster's wake for it arrives.
    const resume = makeWakeSuspended({ executions, store, wake: schedule, scope })

    /** When a child run a parent waits for has ended, the parent continues. */
    const wakeParent = (runId: string) =>
      Effect.gen(function*() {
        const run = yield* store.getRun(runId)
        if (Option.isNone(run) || run.value.parentRunId === null || run.value.parentToolCallId === null) return
        if (!finalStatuses.has(run.value.status)) return
        const parent = yield* store.getRun(run.value.parentRunId)
        if (Option.isSome(parent) && parent.value.status === "suspended") yield* wakeSuspended(parent.value)
      }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("could not wake a parent run", cause)))

    const { cancel, steer } = makeCancellations({
      store,
      journal,
      instances,
      executions,
      owner,
      refusals,
      findRun,
      wakeParent,
      successor: submissions.successor,
      // The approvals are made below; a cancel comes only once the executor is made.
      closeApprovals: (runId, reason) => Effect.suspend(() => approvals.closeFor(runId, reason))
    })

    // Made before the approvals, whose expiry fiber may resume runs at once: an execution forked
    // then finds `execute` made. It tells the approvals of a new one only when a run suspends.
    const execute = makeLeasedExecution({
      journal,
      store,
      // The run scheduled again last ends the execution that found runs ahead of it.
      behind: (ahead, run) => Effect.forEach([...ahead, run], (next) => schedule(next), { discard: true }),
      releases,
      owner,
      leaseTtl,
      hold,
      letGo,
      asked: Effect.suspend(() => approvals.asked),
      wakeParent,
      builtMeanwhile: wakeIfBuiltMeanwhile(current, wakeSuspended)
    })
    const approvals = yield* makeApprovalDecisions(wakeSuspended)
    yield* wakeOnBuilds(current, store, wakeSuspended)

    const decide = Effect.fn("Dispatcher.decide")(function*(
      approvalId: string,
      decision: "approve" | "deny",
      reason: string | undefined,
      scope: ApprovalScope = "once"
    ) {
      return yield* approvals.decide(approvalId, decision === "approve" ? "approved" : "denied", reason, scope)
    })

    /**
     * Takes up the runs of conversations no live executor holds: at the start, those the process
     * before this one left (and those of any process on the store that died); later, those of a
     * process on the store that died since this one started (or whose leases expired unrenewed). A
     * conversation with a run in this process's lane is left to it, as one another live process
     * holds is left to that one: its runs wait there for their turn. Wakes the suspended runs such
     * a process left waiting on nothing (a child ended, an approval decided, a build with their
     * agent: this one, if it has the agent), or that nobody woke ten lease lifetimes after an
     * approval of theirs was decided or a child of theirs ended; at the start, every one nobody holds.
     */
    const takeUp = (starting: boolean) =>
      Effect.gen(function*() {
        const app = yield* current.get
        const taken = yield* journal.takeOverStranded(owner, leaseTtl, {
          holders: { dead: isDeadExecutor, alive: isLiveExecutor },
          here: executions.busy,
          wakes: goesOnWith(app),
          starting
        })
        const inFlight = new Set(taken.conversations)
        const suspended = new Set(taken.suspended)
        const unfinished = inFlight.size === 0
          ? []
          : (yield* store.unfinishedRuns).filter((run) => inFlight.has(run.conversationId) && !executions.isHere(run.id))
        const waiting = suspended.size === 0
          ? []
          : (yield* store.suspendedReadyToResume).filter((run) => suspended.has(run.id) && !executions.isHere(run.id))
        yield* Effect.forEach([...unfinished, ...waiting], (run) => schedule(run), { discard: true })
        return { unfinished: unfinished.length, waiting: waiting.length }
      })

    const recover = Effect.map(takeUp(true), ({ unfinished, waiting }) => unfinished + waiting)

    const adopt = Effect.gen(function*() {
      const { unfinished, waiting } = yield* takeUp(false)
      if (unfinished > 0) {
        yield* Effect.logInfo(`took up ${unfinished} unfinished run${unfinished === 1 ? "" : "s"} of a process on this store that stopped`)
      }
      if (waiting > 0) {
        yield* Effect.logInfo(`woke ${waiting} suspended run${waiting === 1 ? "" : "s"} that a process on this store left waiting when it stopped`)
      }
      return unfinished + waiting
    })

    /**
     * Waits `millis` of the machine's time, not the `Clock`'s: what adoption looks for is another
     * process dying, which happens on the machine's time. On a test clock moved by months (a
     * schedule's misfires after downtime), a `Clock` sleep would wake once for every lease's
     * lifetime in between, each waking a store read.
     */
    const afterRealTime = (millis: number) =>
      Effect.async<void>((resume) => {
        const timer = setTimeout(() => resume(Effect.void), millis)
        return Effect.sync(() => clearTimeout(timer))
      })

    let adopting = false
    /**
     * `adopt` once a lease's lifetime from now on, for as long as the executor runs: a crashed
     * holder's runs are taken up about as soon as its leases would have expired.
     */
    const keepAdopting = Effect.suspend(() => {
      if (adopting) return Effect.void
      adopting = true
      return Effect.zipRight(afterRealTime(leaseTtl), adopt).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("could not look for the runs of a process that stopped", cause)),
        Effect.forever,
        Effect.forkIn(scope),
        Effect.asVoid
      )
    })

    return {
      /** This executor's name, as it holds leases. */
      owner,
      /** Executes the run here, after its conversation's runs already in this process's lane. */
      schedule,
      /** Whether the run is executing, or waiting in a lane, in this process. */
      isHere: executions.isHere,
      /**
       * Executes a suspended run here now what it waited for came to pass; one still executing here
       * once that execution ends, if it is then suspended and waits on nothing.
       */
      resume,
      /** How many runs execute, or wait in a lane, in this process. */
      executing: executions.count,
      submit: submissions.submit,
      /** Cancels the run if it executes here (else only marks it); `reason` answers each tool call it leaves open. */
      cancel,
      /** Cancels the run with the dispatcher's `cancel` and starts its successor in the same conversation, if its instance takes runs. */
      steer,
      decide,
      /** Resumes every unfinished run of the store in this process. */
      recover,
      /**
       * From now on, takes up the runs of processes on the store that stop with runs in flight,
       * and wakes the suspended runs they leave waiting on nothing (a look once every lease TTL);
       * once, however often it is asked.
       */
      keepAdopting,
      /** Waits until the run's execution in this process has ended; at once when it executes elsewhere. */
      awaitHere: executions.awaitHere,
      findRun
    }
  })
