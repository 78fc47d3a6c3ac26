/**
 * The Store: instances, conversations, messages, runs and events, kept durably. One interface,
 * with a SQL implementation (`SqlStore`) that runs on SQLite (embedded default) and later Postgres.
 */
import { Context, type Effect, type Option, Schema } from "effect"
import type { FoundryEvent } from "../events/FoundryEvent.js"
import type { ChatMessage } from "../models/Model.js"
import type {
  ActivationRecord,
  ApprovalRecord,
  ApprovalStatus,
  ConversationRecord,
  GrantRecord,
  InstanceRecord,
  RunFilter,
  RunRecord,
  RunStatus,
  UsageFilter,
  GroupedUsage,
  UsageGrouping,
  UsageSums
} from "./records.js"

/** The store could not do what was asked; `operation` says what. */
export class StoreError extends Schema.TaggedError<StoreError>()("StoreError", {
  operation: Schema.String,
  message: Schema.String
}) {}

/** A write was fenced off: the conversation's lease belongs to a newer grant (another executor). */
export class LeaseLost extends Schema.TaggedError<LeaseLost>()("LeaseLost", {
  conversationId: Schema.String,
  token: Schema.Number
}) {
  override get message(): string {
    return `the lease on conversation ${this.conversationId} (token ${this.token}) was taken over by another executor`
  }
}

/** A message of a conversation, with where it came from. */
export interface StoredMessage {
  readonly seq: number
  readonly runId: string
  readonly message: ChatMessage
  readonly createdAt: number
}

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
}

/** A timer to keep: its spec says what to run; `nextFire` when. */
export interface ActivationUpdate {
  readonly id: string
  readonly kind: string
  readonly spec: Readonly<Record<string, unknown>>
  readonly status: "active" | "paused" | "done"
  readonly nextFire: number | null
  readonly lastFire?: number | null
  readonly lastRunId?: string | null
}

/** An approval about to be asked for. */
export interface NewApproval {
  readonly id: string
  readonly runId: string
  readonly toolCallId: string
  readonly agent: string
  readonly tool: string
  readonly input: unknown
  readonly expiresAt: number
}

/** A conversation grant about to be stored. */
export interface NewGrant {
  readonly conversationId: string
  readonly agent: string
  readonly tool: string
  readonly approvalId: string
}

/** A conversation lease: who may execute the conversation's runs, and the fencing token of that grant. */
export interface Lease {
  readonly conversationId: string
  readonly owner: string
  readonly token: number
}

/** A change to a run's status, with its output or error when it ends. */
export interface RunUpdate {
  readonly status: RunStatus
  readonly output?: string
  readonly error?: string
}

/** One model turn's usage, added to its run. */
export interface TurnUsage {
  readonly inputTokens: number
  readonly outputTokens: number
  /** `null` when the model has no price: the turn counts as unpriced. */
  readonly costUsd: number | null
}

/** Filters for reading events, oldest first; `after` is a `seq` cursor. */
export interface EventFilter {
  readonly runId?: string | undefined
  readonly conversationId?: string | undefined
  readonly instanceId?: string | undefined
  readonly agent?: string | undefined
  readonly type?: string | undefined
  /** Events at or after this time (ms since the epoch). */
  readonly since?: number | undefined
  readonly after?: number | undefined
  readonly limit?: number | undefined
}

/** How long events are kept: by age, by count, or both. */
export interface EventRetention {
  readonly olderThan?: number | undefined
  readonly keepLatest?: number | undefined
}

/** The durable store. */
export class Store extends Context.Tag("foundry/Store")<Store, {
  /** The instance `id` of `agent`, created with `context` on first use. */
  readonly ensureInstance: (
    agent: string,
    id: string,
    context?: Readonly<Record<string, unknown>>
  ) => Effect.Effect<InstanceRecord, StoreError>
  readonly getInstance: (agent: string, id: string) => Effect.Effect<Option.Option<InstanceRecord>, StoreError>
  /** The instance, created on first use in one atomic statement; `created` says whether this call made it. */
  readonly provisionInstance: (
    agent: string,
    id: string
  ) => Effect.Effect<{ readonly instance: InstanceRecord; readonly created: boolean }, StoreError>
  /**
   * Claims an inbound delivery by its id: `claimed` for the first caller; later callers get the
   * stored result once the first has finished (or `processing` while it has not).
   */
  readonly claimDelivery: (id: string, webhook: string) => Effect.Effect<
    { readonly _tag: "claimed" } | { readonly _tag: "processing" } | { readonly _tag: "done"; readonly result: unknown },
    StoreError
  >
  readonly completeDelivery: (id: string, result: unknown) => Effect.Effect<void, StoreError>
  readonly listActivations: (kind: string) => Effect.Effect<ReadonlyArray<ActivationRecord>, StoreError>
  readonly getActivation: (id: string) => Effect.Effect<Option.Option<ActivationRecord>, StoreError>
  /** Activations due by `now`, soonest first. */
  readonly dueActivations: (now: number, limit: number) => Effect.Effect<ReadonlyArray<ActivationRecord>, StoreError>
  /** The soonest `nextFire` of an active activation. */
  readonly nextActivationTime: Effect.Effect<number | null, StoreError>
  readonly saveActivation: (activation: ActivationUpdate) => Effect.Effect<void, StoreError>
  readonly deleteActivation: (id: string) => Effect.Effect<void, StoreError>
  readonly createConversation: (id: string, agent: string, instanceId: string) => Effect.Effect<ConversationRecord, StoreError>
  readonly getConversation: (id: string) => Effect.Effect<Option.Option<ConversationRecord>, StoreError>
  /** Appends a message; with a `lease`, only while that lease is the current grant. */
  readonly appendMessage: (
    conversationId: string,
    runId: string,
    message: ChatMessage,
    lease?: Lease
  ) => Effect.Effect<void, StoreError | LeaseLost>
  readonly listMessages: (conversationId: string) => Effect.Effect<ReadonlyArray<StoredMessage>, StoreError>
  readonly createRun: (run: NewRun) => Effect.Effect<RunRecord, StoreError>
  readonly updateRun: (id: string, update: RunUpdate) => Effect.Effect<void, StoreError>
  /** Adds a model turn's usage to its run; returns the run's new totals. */
  readonly addRunUsage: (id: string, usage: TurnUsage) => Effect.Effect<UsageSums, StoreError>
  /** Usage summed over the runs `filter` selects. */
  readonly sumUsage: (filter: UsageFilter) => Effect.Effect<UsageSums, StoreError>
  /** Usage summed over the runs `filter` selects, one group per key of `groupBy`, in key order. */
  readonly sumUsageBy: (filter: UsageFilter, groupBy: UsageGrouping) => Effect.Effect<ReadonlyArray<GroupedUsage>, StoreError>
  readonly getRun: (id: string) => Effect.Effect<Option.Option<RunRecord>, StoreError>
  readonly findRunByIdempotencyKey: (key: string) => Effect.Effect<Option.Option<RunRecord>, StoreError>
  /** The child run that answers a parent's tool call, if it was started. */
  readonly findChildRun: (parentRunId: string, toolCallId: string) => Effect.Effect<Option.Option<RunRecord>, StoreError>
  /** Every run a run started. */
  readonly childRuns: (parentRunId: string) => Effect.Effect<ReadonlyArray<RunRecord>, StoreError>
  /** Suspended runs none of whose children is still going: parents a crash kept from waking. */
  readonly parentsReadyToResume: Effect.Effect<ReadonlyArray<RunRecord>, StoreError>
  readonly listRuns: (filter: RunFilter) => Effect.Effect<ReadonlyArray<RunRecord>, StoreError>
  /** Runs that were queued or running when the process stopped. */
  readonly unfinishedRuns: Effect.Effect<ReadonlyArray<RunRecord>, StoreError>
  /** Stores events in one transaction; `seq` is assigned by the store, in order. */
  readonly appendEvents: (events: ReadonlyArray<Omit<FoundryEvent, "seq">>) => Effect.Effect<ReadonlyArray<FoundryEvent>, StoreError>
  readonly listEvents: (filter: EventFilter) => Effect.Effect<ReadonlyArray<FoundryEvent>, StoreError>
  /** Deletes events before `olderThan` (ms since the epoch) and all but the newest `keepLatest`; returns how many went. */
  readonly pruneEvents: (retention: EventRetention) => Effect.Effect<number, StoreError>
  /** Asks for an approval; asking again for the same tool call returns the first one. */
  readonly createApproval: (approval: NewApproval) => Effect.Effect<ApprovalRecord, StoreError>
  readonly getApproval: (id: string) => Effect.Effect<Option.Option<ApprovalRecord>, StoreError>
  readonly findApproval: (runId: string, toolCallId: string) => Effect.Effect<Option.Option<ApprovalRecord>, StoreError>
  readonly listApprovals: (status: ApprovalStatus | undefined) => Effect.Effect<ReadonlyArray<ApprovalRecord>, StoreError>
  /** Decides a pending approval; `None` when it was already decided (a decision applies once). */
  readonly decideApproval: (
    id: string,
    status: Exclude<ApprovalStatus, "pending">,
    reason: string | undefined
  ) => Effect.Effect<Option.Option<ApprovalRecord>, StoreError>
  /** Approves `tool` for the rest of the conversation; a grant already there stays as it was. */
  readonly grantForConversation: (grant: NewGrant) => Effect.Effect<void, StoreError>
  /** The conversation's grant for `tool`, if a person gave one. */
  readonly findGrant: (conversationId: string, tool: string) => Effect.Effect<Option.Option<GrantRecord>, StoreError>
  /**
   * Takes the conversation's lease for `owner` if it is free, expired or already `owner`'s; the
   * token grows with every new grant, so a stale holder can be told apart.
   */
  readonly acquireLease: (conversationId: string, owner: string, ttlMillis: number) => Effect.Effect<Option.Option<Lease>, StoreError>
  /** Extends a lease; `false` when the lease is no longer this grant's. */
  readonly renewLease: (lease: Lease, ttlMillis: number) => Effect.Effect<boolean, StoreError>
  readonly releaseLease: (lease: Lease) => Effect.Effect<void, StoreError>
  /** Whether the lease is still the current grant (the fencing check before a write). */
  readonly holdsLease: (lease: Lease) => Effect.Effect<boolean, StoreError>
}>() {}
