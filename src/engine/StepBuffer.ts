/**
 * What a run has done since its last commit: transcript messages, events and usage, written as
 * one step of the run journal before the run does anything another party could see (asks a
 * model, runs a tool, starts a child run, waits or ends). Text deltas are not part of a step:
 * they are streamed live and never stored.
 */
import { Effect } from "effect"
import type { RunRecord } from "../durable/records.js"
import type { StoreError } from "../durable/StoreError.js"
import { type EventDraft, EventLog } from "../events/EventLog.js"
import type { EventPayload, EventType } from "../events/FoundryEvent.js"
import type { Lease, RunUpdate, TurnUsage } from "../journal/journalRecords.js"
import { type LeaseLost, RunJournal } from "../journal/RunJournal.js"
import { eventOf } from "../journal/trace.js"
import type { ChatMessage } from "../models/Model.js"

/** How a step ends the run's execution, if it does. */
export interface StepEnd {
  readonly status?: RunUpdate
  readonly releaseLease?: boolean
}

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
  /** Writes everything pending, with `end`, as one step; nothing is written when nothing is pending. */
  readonly commit: (end?: StepEnd) => Effect.Effect<void, StoreError | LeaseLost>
}

/** A step buffer for `run`, whose writes `lease` fences; `written` is told of each step written. */
export const makeStepBuffer = (run: RunRecord, lease: Lease | undefined, written?: () => void) =>
  Effect.gen(function*() {
    const journal = yield* RunJournal
    const events = yield* EventLog
    let messages: Array<ChatMessage> = []
    let drafts: Array<EventDraft> = []
    let usage: Array<TurnUsage> = []
    const buffer: StepBuffer = {
      // `emit`'s signature ties each call's data to its type; TypeScript cannot carry that tie
      // through a type parameter into the array of all drafts, so the draft is made at the union.
      emit: (type, step, data, parentStep) => {
        drafts.push(eventOf<EventType>(run, type, data, step, parentStep))
      },
      // Text deltas are only streamed: with nobody following, there is nothing to make.
      deltas: (step, data) => events.followed() ? events.emitLive(data.map((delta) => eventOf(run, "model.delta", delta, step))) : Effect.void,
      push: (draft) => drafts.push(draft),
      message: (message) => messages.push(message),
      usage: (turn) => usage.push(turn),
      commit: (end = {}) =>
        Effect.suspend(() => {
          if (messages.length === 0 && drafts.length === 0 && usage.length === 0 && end.status === undefined) return Effect.void
          const step = { messages, events: drafts, usage, ...end }
          messages = []
          drafts = []
          usage = []
          return Effect.map(journal.record(run, step, lease), () => written?.())
        })
    }
    return buffer
  })
