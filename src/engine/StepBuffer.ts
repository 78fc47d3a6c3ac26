/**
 * What a run has done since its last commit: transcript messages, events and usage, written as
 * one step of the run journal before the run does anything another party could see (runs a tool,
 * starts a child run, waits or ends). Its start, or the results of a turn's calls, with the next
 * model turn begun (`commitSoon`) are written while the model is asked, or with its answer. Text
 * deltas are not part of a step: they are streamed live and never stored.
 */
import { Deferred, Effect, Exit, FiberId, Runtime } from "effect"
import { ActivationStorage } from "../durable/ActivationStorage.js"
import type { RunRecord } from "../durable/records.js"
import type { StoreError } from "../durable/StoreError.js"
import { type EventDraft, EventLog } from "../events/EventLog.js"
import type { EventPayload, EventType } from "../events/FoundryEvent.js"
import type { Lease, NewApproval, RunUpdate, TimerChange, TurnUsage } from "../journal/journalRecords.js"
import { type LeaseLost, RunJournal } from "../journal/RunJournal.js"
import { eventOf } from "../journal/trace.js"
import type { ChatMessage } from "../models/Model.js"

/** How a step ends the run's execution, if it does. */
export interface StepEnd {
  readonly status?: RunUpdate
  readonly releaseLease?: boolean
}

/** What a step holds until it is written, and how it ends the run's execution. */
interface Pending {
  readonly messages: Array<ChatMessage>
  readonly drafts: Array<EventDraft>
  readonly usage: Array<TurnUsage>
  readonly approvals: Array<NewApproval>
  readonly timers: Array<TimerChange>
  readonly end: StepEnd
}

/** `later` after `earlier`, as one step that ends as `end` says. */
const joined = (earlier: Pending, later: Pending, end: StepEnd): Pending => ({
  messages: [...earlier.messages, ...later.messages],
  drafts: [...earlier.drafts, ...later.drafts],
  usage: [...earlier.usage, ...later.usage],
  approvals: [...earlier.approvals, ...later.approvals],
  timers: [...earlier.timers, ...later.timers],
  end
})

/** A run's pending step. */
export interface StepBuffer {
  /** Adds an event of the run at `step` (a span under `parentStep`, default the run's own); `data` is the payload of `type`. */
  readonly emit: <T extends EventType>(type: T, step: string, data: EventPayload<T>, parentStep?: string) => void
  /** Streams text deltas live, together (never stored). */
  readonly deltas: (step: string, data: ReadonlyArray<EventPayload<"model.delta">>) => Effect.Effect<void>
  /** Adds an event already drafted. */
  readonly push: (draft: EventDraft) => void
  readonly message: (message: ChatMessage) => void
  readonly usage: (usage: TurnUsage) => void
  /**
   * Asks a person for an approval: stored with the step that suspends the run on it (and with
   * that step's `approval.requested`), so that a step the lease fenced off (the run cancelled from
   * another process meanwhile) leaves no approval behind.
   */
  readonly ask: (approval: NewApproval) => void
  /**
   * A timer tool call's change to the instance's timers, stored with the step that holds the
   * call's answer: a step never written (the run cancelled or stopped first, its lease taken)
   * leaves the timers as they were, and the call is answered as one that did not run.
   */
  readonly timer: (change: TimerChange) => void
  /**
   * Writes everything pending, with `end`, as one step (after a `commitSoon` step still being
   * written, and failing as it did); nothing is written when nothing is pending.
   */
  readonly commit: (end?: StepEnd) => Effect.Effect<void, StoreError | LeaseLost>
  /**
   * `commit`, without the run waiting for it, for a model about to be asked: what is pending then
   * is the run's start and its message, or the results of the last turn's calls, with the turn
   * begun. A model may be asked before that is stored, since asking one changes nothing a crash
   * would have to account for: killed before the step is stored, the run is taken up again from
   * the step before, where those calls have no result, as when it is killed while they run. The
   * step goes with the run's next commit if that comes in this turn of the event loop (a model
   * that answers at once: one synced commit instead of two), else it is written on its own at the
   * next turn, while the model is asked; unless the model has answered by then (the run reads
   * something before its next commit, the instance's context for a tool call): the run commits
   * next, and the step goes with that commit. Text deltas wait until it is published, so that
   * followers see the results and the turn begin before its text; with the next commit they are
   * dropped, as that commit carries the end of the attempt they belong to (its answer whole, a
   * retry, a failure). A pending model answer is what the run acts on next (its calls run, it
   * ends): with one, this is `commit`.
   */
  readonly commitSoon: (end?: StepEnd) => Effect.Effect<void, StoreError | LeaseLost>
  /**
   * For an execution being stopped (a cancel, a steer, its process stopping, its lease taken): a
   * step `commitSoon` handed on and not yet written is written now, and one being written is
   * waited for, so that whoever stopped the run reads its transcript with that step (a call's
   * result stored after a cancel had answered the call would answer it twice; one never stored
   * would run the call again after a restart). A model's answer not yet committed is not written.
   * Never fails: a write the lease fences off writes nothing.
   */
  readonly settle: Effect.Effect<void>
  /**
   * Lets go of what is pending, for an execution that goes on with a buffer of its own (after a
   * step the store did not take): a step `commitSoon` handed on is not written any more, and one
   * being written is waited for, so that what the next execution reads of the run has it or never will.
   */
  readonly abandon: Effect.Effect<void>
}

/** A step buffer for `run`, whose writes `lease` fences; `written` is told of each step written. */
export const makeStepBuffer = (run: RunRecord, lease: Lease | undefined, written?: () => void) =>
  Effect.gen(function*() {
    const journal = yield* RunJournal
    const events = yield* EventLog
    const activations = yield* ActivationStorage
    let messages: Array<ChatMessage> = []
    let drafts: Array<EventDraft> = []
    let usage: Array<TurnUsage> = []
    let approvals: Array<NewApproval> = []
    let timers: Array<TimerChange> = []
    // What `commitSoon` handed on (what was pending then, and how it ends) until a write takes it;
    // the write that took it until it is done (kept once it failed: every later commit fails as it
    // did); text deltas until it is published.
    let handed: Pending | undefined
    let writingSoon: Deferred.Deferred<void, StoreError | LeaseLost> | undefined
    let heldDeltas: Array<EventDraft> | undefined

    /** What is pending, taken: the buffer holds nothing after. */
    const take = (end: StepEnd): Pending => {
      const taken = { messages, drafts, usage, approvals, timers, end }
      messages = []
      drafts = []
      usage = []
      approvals = []
      timers = []
      return taken
    }
    /** Writes `pending` as one step, unless it holds nothing. */
    const writeStep = (pending: Pending) => {
      const { approvals, drafts, end, messages, timers, usage } = pending
      if (
        messages.length === 0 && drafts.length === 0 && usage.length === 0 && approvals.length === 0 && timers.length === 0 &&
        end.status === undefined && end.releaseLease !== true
      ) return Effect.void
      const recorded = Effect.map(journal.record(run, { messages, events: drafts, usage, approvals, timers, ...end }, lease), () => written?.())
      // The scheduler here reads the timers again: one may be due sooner than the one it sleeps for.
      // Also when the run is interrupted while the step is written, which is written all the same.
      return timers.length === 0 ? recorded : Effect.ensuring(recorded, activations.changed)
    }
    /** Writes what is pending with `end`, after what `commitSoon` handed on, which it takes. */
    const write = (end: StepEnd) => {
      const taken = handed
      handed = undefined
      if (taken === undefined) return writeStep(take(end))
      // The run's start going with a step that ends the turn (a final answer, a failure, a wait) keeps its start time.
      const starts = taken.end.status?.status === "running" && end.status !== undefined && end.status.status !== "running"
      return writeStep(joined(taken, take(end), { ...taken.end, ...end, ...(starts ? { starts } : {}) }))
    }
    const commit = (end: StepEnd = {}) =>
      Effect.suspend(() => {
        // Deltas held for a step this commit takes: the attempt they belong to ends with it.
        if (handed !== undefined) heldDeltas = undefined
        const before = writingSoon
        return before === undefined ? write(end) : Effect.zipRight(Deferred.await(before), Effect.suspend(() => write(end)))
      })
    /** Whether a model's answer is pending: the run's next commit is at hand. */
    const answered = () => messages.some((message) => message._tag === "assistant")
    /**
     * The step `commitSoon` handed on, written on its own (no commit took it within the turn of the
     * loop, or the execution is stopped): what it held, not what came after (a model's answer goes
     * with the commit that follows it).
     */
    const writeSoon = Effect.suspend(() => {
      const taken = handed
      if (taken === undefined) return Effect.void
      handed = undefined
      const done = Deferred.unsafeMake<void, StoreError | LeaseLost>(FiberId.none)
      writingSoon = done
      return Effect.flatMap(Effect.exit(writeStep(taken)), (exit) => {
        // Failed, the run's next commit fails as it did: its deltas stay held, to be dropped with the buffer.
        if (Exit.isFailure(exit)) return Deferred.done(done, exit)
        const held = heldDeltas
        heldDeltas = undefined
        writingSoon = undefined
        // Published before the commit waiting for this one goes on: its events come after them.
        return Effect.zipRight(held !== undefined && held.length > 0 ? events.emitLive(held) : Effect.void, Deferred.done(done, exit))
      })
    })

    const buffer: StepBuffer = {
      // `emit`'s signature ties each call's data to its type; TypeScript cannot carry that tie
      // through a type parameter into the array of all drafts, so the draft is made at the union.
      emit: (type, step, data, parentStep) => {
        drafts.push(eventOf<EventType>(run, type, data, step, parentStep))
      },
      // Text deltas are only streamed: with nobody following, there is nothing to make.
      deltas: (step, data) => {
        if (!events.followed(run)) return Effect.void
        const made = data.map((delta) => eventOf(run, "model.delta", delta, step))
        if (heldDeltas === undefined) return events.emitLive(made)
        heldDeltas.push(...made)
        return Effect.void
      },
      push: (draft) => drafts.push(draft),
      message: (message) => messages.push(message),
      usage: (turn) => usage.push(turn),
      ask: (approval) => approvals.push(approval),
      timer: (change) => timers.push(change),
      commit,
      commitSoon: (end = {}) =>
        Effect.suspend(() => {
          // An approval asked for is stored with the step that suspends the run on it, never handed on.
          if (writingSoon !== undefined || answered() || approvals.length > 0) return commit(end)
          const before = handed
          const current = take(end)
          if (before !== undefined) {
            // Handed on already in this turn of the loop: what came since goes with it.
            handed = joined(before, current, { ...before.end, ...end })
            return Effect.void
          }
          handed = current
          heldDeltas = []
          // No fiber unless it is needed: a model that answers at once leaves the step to the next
          // commit, also when the run reads something before it (the instance's context for a tool
          // call, a read that lets the loop turn on PostgreSQL): with its answer, the run commits next.
          return Effect.map(Effect.runtime<never>(), (runtime) => {
            setImmediate(() => {
              if (handed !== undefined && !answered()) Runtime.runFork(runtime)(writeSoon)
            })
          })
        }),
      settle: Effect.suspend(() => writingSoon === undefined ? Effect.asVoid(writeSoon) : Effect.ignore(Deferred.await(writingSoon))),
      abandon: Effect.suspend(() => {
        handed = undefined
        heldDeltas = undefined
        take({})
        return writingSoon === undefined ? Effect.void : Effect.ignore(Deferred.await(writingSoon))
      })
    }
    return buffer
  })
