/**
 * How runs end from outside: a cancel (the tool calls it leaves open answered in the step that ends
 * it, the children it waits for cancelled with it, a parent waiting for it woken) and a steer (a
 * cancel, then its successor in the same conversation).
 */
import { Clock, type Context, Duration, Effect, Option } from "effect"
import type { InstanceStorage } from "../durable/InstanceStorage.js"
import { finalStatuses, type RunRecord } from "../durable/records.js"
import type { Store } from "../durable/Store.js"
import type { StoreError } from "../durable/StoreError.js"
import { closeOpenCalls } from "../engine/closeOpenCalls.js"
import type { RunJournal } from "../journal/RunJournal.js"
import { eventOf } from "../journal/trace.js"
import { endedBeforeDecision } from "./approvalDecisions.js"
import { RunAlreadyEnded, type RunNotFound } from "./Dispatcher.js"
import type { Executions } from "./executions.js"
import type { InstanceRefusals } from "./instanceRefusals.js"
import type { Submissions } from "./submissions.js"

/** Cancels a run; `reason` becomes the result of each tool call it leaves open. */
export type Cancel = (runId: string, reason: string) => Effect.Effect<RunRecord, RunNotFound | RunAlreadyEnded | StoreError>

/** What cancels and steers need of their executor. */
export interface CancellationsOptions {
  readonly store: Context.Tag.Service<Store>
  readonly journal: Context.Tag.Service<RunJournal>
  readonly instances: Context.Tag.Service<InstanceStorage>
  readonly executions: Executions
  /** The executor's name, as it holds leases. */
  readonly owner: string
  readonly refusals: InstanceRefusals
  /** The run as stored now, or `RunNotFound`. */
  readonly findRun: (runId: string) => Effect.Effect<RunRecord, RunNotFound | StoreError>
  /** Wakes the run's parent if it waits for the run, now ended. */
  readonly wakeParent: (runId: string) => Effect.Effect<void>
  /** Expires the approvals the run still waits for, saying why (the run is not resumed for them). */
  readonly closeApprovals: (runId: string, reason: string) => Effect.Effect<void, StoreError>
  /** Queues the run that takes over a steered run's conversation. */
  readonly successor: Submissions["successor"]
}

/** Cancels and steers, by an executor. */
export const makeCancellations = (options: CancellationsOptions) => {
  const { executions, findRun, instances, journal, store, wakeParent } = options

  const alreadyEnded = (run: RunRecord) =>
    new RunAlreadyEnded({ runId: run.id, status: run.status, message: `run "${run.id}" has already ended (${run.status})` })

  const cancel: Cancel = (runId, reason) => cancelAfter(runId, reason, 0)

  /** The cancel, after `tries` that were sent back to read the run again (its executor stored a step meanwhile). */
  const cancelAfter = Effect.fn("Dispatcher.cancel")(function*(runId: string, reason: string, tries: number): Effect.fn.Return<
    RunRecord,
    RunNotFound | RunAlreadyEnded | StoreError
  > {
    const run = yield* findRun(runId)
    if (finalStatuses.has(run.status)) return yield* alreadyEnded(run)
    yield* executions.stop(runId)
    // Ended meanwhile (its last step, or another cancel): this cancel is not the one that ended it.
    const latest = yield* findRun(runId)
    if (finalStatuses.has(latest.status)) return yield* alreadyEnded(latest)
    // A run waiting for a person: its approvals close before it ends, so that they are told in its
    // events before its end (a follower's stream ends there).
    if (latest.status === "suspended") yield* options.closeApprovals(runId, endedBeforeDecision("cancelled"))
    // Whoever ends the run answers its open calls, in the step that ends it; of two cancels at once,
    // one ends it and the other finds it ended. The answers are to the run's messages as read here:
    // a step of its executor elsewhere stored since (a call's result, a turn with calls) sends the
    // cancel back to read them again, rather than answering a call twice, or a turn's calls not at all.
    const stored = yield* store.listMessages(latest.conversationId)
    const closing = closeOpenCalls(latest, stored, reason, yield* Clock.currentTimeMillis)
    const written = yield* journal.record(latest, {
      messages: closing.messages,
      events: [...closing.events, eventOf(latest, "run.cancelled", { from: latest.status })],
      status: { status: "cancelled" },
      messagesThrough: stored.findLast((message) => message.runId === latest.id)?.seq ?? 0,
      // Running in another process on this store (this one has no fiber of it to interrupt): that
      // executor's lease goes with the cancel, so it writes nothing more and stops.
      ...(latest.status === "running" ? { revokeLeaseFor: options.owner } : {})
    }).pipe(Effect.as(true), Effect.catchTag("LeaseLost", () => Effect.succeed(false)))
    if (!written) {
      const now = yield* findRun(runId)
      if (finalStatuses.has(now.status)) return yield* alreadyEnded(now)
      // Read again after a pause that grows with each try (up to a tenth of a second): an executor
      // storing steps fast does not meet a cancel that asks the store for its messages in a loop.
      yield* Effect.sleep(Duration.millis(Math.min(100, 2 ** tries)))
      return yield* cancelAfter(runId, reason, tries + 1)
    }
    // Asked for while the cancel was on its way: stored by the run's suspension, a step that
    // committed after the run was read above and before this one took its lease.
    yield* options.closeApprovals(runId, endedBeforeDecision("cancelled"))
    // Children this run waits for go with it; a cancelled child wakes its waiting parent.
    const children = yield* store.childRuns(runId)
    for (const child of children) {
      if (child.parentToolCallId !== null && !finalStatuses.has(child.status)) {
        yield* cancel(child.id, "cancelled: the run that asked for it was cancelled").pipe(
          Effect.catchTags({ RunAlreadyEnded: () => Effect.void, RunNotFound: () => Effect.void })
        )
      }
    }
    yield* wakeParent(runId)
    return yield* findRun(runId)
  })

  /**
   * Steers the run with `cancelWith` (how the dispatcher cancels where the run is). Its instance is
   * asked first: on a paused or archived one the successor would be refused after the cancel,
   * leaving the conversation with neither run.
   */
  const steer = (cancelWith: Cancel) =>
    Effect.fn("Dispatcher.steer")(function*(runId: string, message: string) {
      const run = yield* findRun(runId)
      const instance = yield* instances.get(run.agent, run.instanceId)
      if (Option.isSome(instance) && instance.value.status !== "active") return yield* options.refusals.unavailable(run)
      const cancelled = yield* cancelWith(runId, `cancelled by steer: ${message}`)
      // A run steered before it started never recorded its message (a run's first step does): the
      // successor's input carries it before the steer's, as a model is sent two user messages in a
      // row, or the model would read the correction alone. Recorded when the successor starts, it
      // stays after the messages of the runs ahead of it.
      const started = (yield* store.listMessages(cancelled.conversationId)).some((stored) => stored.runId === cancelled.id)
      return yield* options.successor(cancelled, started ? message : `${cancelled.input}\n\n${message}`)
    })

  return { cancel, steer }
}
