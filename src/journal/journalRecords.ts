/**
 * What the run journal writes and hands back: a run to queue, a step of a run, a status change,
 * a turn's usage, and the conversation lease that fences a run's writes.
 */
import type { ActivationStatus, ActivationUpdate } from "../durable/ActivationStorage.js"
import type { RunStatus } from "../durable/records.js"
import type { EventDraft } from "../events/EventLog.js"
import type { ChatMessage } from "../models/Model.js"

/** A conversation lease: who may execute the conversation's runs, and the fencing token of that grant. */
export interface Lease {
  readonly conversationId: string
  readonly owner: string
  readonly token: number
}

/** An approval about to be asked for: stored with the step that suspends the run on it. */
export interface NewApproval {
  readonly id: string
  readonly runId: string
  readonly toolCallId: string
  readonly agent: string
  readonly tool: string
  readonly input: unknown
  readonly expiresAt: number
}

/**
 * A change a timer tool call makes to its instance's timers (one armed, paused, resumed or
 * cancelled): stored with the step that holds the call's answer, so that the timers are as the
 * answers the conversation keeps say.
 */
export type TimerChange =
  | { readonly _tag: "Save"; readonly activation: ActivationUpdate }
  | { readonly _tag: "SetStatus"; readonly id: string; readonly status: ActivationStatus; readonly nextFire: number | null }
  | { readonly _tag: "Remove"; readonly id: string }

/** A run about to be queued. */
export interface NewRun {
  readonly id: string
  readonly agent: string
  readonly instanceId: string
  readonly conversationId: string
  readonly input: string
  /** Repeating a submission with the same key returns the first run. */
  readonly idempotencyKey?: string | undefined
  readonly steeredFrom?: string | undefined
  readonly parentRunId?: string | undefined
  readonly parentToolCallId?: string | undefined
  readonly traceId?: string | undefined
  readonly parentSpanId?: string | undefined
  readonly source?: Readonly<Record<string, unknown>> | undefined
  /** The release the run starts on: the one its executions load (`Releases.forRun`). */
  readonly release: string
  /** Messages recorded in the conversation before the run's own, under `historyOwner(id)`. */
  readonly history?: ReadonlyArray<ChatMessage> | undefined
  /**
   * The history as the submission gave it, before it was fitted to the agent's model: what its
   * idempotency fingerprint covers (fitting depends on the release, a repeat must not).
   */
  readonly submittedHistory?: ReadonlyArray<ChatMessage> | undefined
}

/**
 * Whose a run's submitted history is in the transcript: not the run's own messages (they decide
 * its next step and count its turns), but the conversation's earlier ones, as another run's are.
 */
export const historyOwner = (runId: string): string => `${runId}:history`

/** A change to a run's status, with its output or error when it ends. */
export interface RunUpdate {
  readonly status: RunStatus
  readonly output?: string
  readonly error?: string
}

/** One model call's usage (a turn's, or a compaction summary's), added to its run. */
export interface TurnUsage {
  readonly inputTokens: number
  readonly outputTokens: number
  /** `null` when the model has no price: the turn counts as unpriced. */
  readonly costUsd: number | null
}

/** What a step's turns used together: added to its run's row by the step's one update of it. */
export interface UsageAdded {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly costUsd: number
  readonly unpricedTurns: number
}

/** The usage of `turns` together; none for a step without turns. */
export const usageAdded = (turns: ReadonlyArray<TurnUsage>): UsageAdded | undefined => {
  if (turns.length === 0) return undefined
  let inputTokens = 0
  let outputTokens = 0
  let costUsd = 0
  let unpricedTurns = 0
  for (const turn of turns) {
    inputTokens += turn.inputTokens
    outputTokens += turn.outputTokens
    if (turn.costUsd === null) unpricedTurns++
    else costUsd += turn.costUsd
  }
  return { inputTokens, outputTokens, costUsd, unpricedTurns }
}

/** What one step of a run writes; every part is optional. */
export interface Step {
  readonly messages?: ReadonlyArray<ChatMessage>
  readonly events?: ReadonlyArray<EventDraft>
  readonly status?: RunUpdate
  /**
   * The run's first step, though `status` says it ended or waits: its start time is recorded as
   * `running` records it (a start that went with the step that ends the turn).
   */
  readonly starts?: boolean
  /** Model calls' usage, added to the run's totals. */
  readonly usage?: ReadonlyArray<TurnUsage>
  /**
   * Approvals the run asks a person for (a tool's gate, a budget gone past), stored pending with
   * the step, under its lease: a step the lease fenced off leaves none behind.
   */
  readonly approvals?: ReadonlyArray<NewApproval>
  /** Timer tool calls' changes to the instance's timers, stored with their answers. */
  readonly timers?: ReadonlyArray<TimerChange>
  /** The step ends this execution: the lease is released in the same transaction. */
  readonly releaseLease?: boolean
  /**
   * The step ends the run from outside (a cancel), by the executor named here: a live lease on the
   * conversation that another executor holds (another process running the run) is revoked in the
   * same transaction, so that executor's next write is fenced off and its renewal tells it to stop.
   */
  readonly revokeLeaseFor?: string
  /**
   * The step was made from the run's own messages as stored up to the one numbered so in its
   * conversation (0: none yet), and is written only while that is still the run's last: a cancel's
   * answers to the calls it found open, which a step of the run's executor stored since would have
   * answered itself, or added calls to. Checked after the step's other guards (on PostgreSQL in a
   * statement of its own, which sees a step that committed while a lock before it was waited for).
   */
  readonly messagesThrough?: number
}

/**
 * Where a run stands in its conversation, read under the conversation's lease: its status, and the
 * runs of the conversation accepted before it that have not run yet, in their order (queued in
 * another process, or left running by one that stopped): they go first.
 */
export interface InLine {
  readonly status: RunStatus
  readonly ahead: ReadonlyArray<string>
}

/**
 * What asking for a conversation's lease gave: the lease, with where the run stands read in the
 * same transaction; or who holds it (grant `token`) and when that lease expires unless it is renewed
 * (`expiresAt`, by the clock leases are judged by; `expiresIn` milliseconds from now by that clock).
 */
export type Claim =
  | { readonly _tag: "Claimed"; readonly lease: Lease; readonly inLine: InLine }
  | { readonly _tag: "Held"; readonly owner: string; readonly token: number; readonly expiresAt: number; readonly expiresIn: number }

/**
 * What a takeover of stranded work took: the conversations whose queued or running runs nobody
 * executes, and the suspended runs that wait on nothing, whose conversations' leases are now the
 * taker's.
 */
export interface Stranded {
  readonly conversations: ReadonlyArray<string>
  readonly suspended: ReadonlyArray<string>
}
