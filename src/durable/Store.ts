/**
 * The Store: instances, conversations, messages, runs and events, kept durably. One interface,
 * with a SQL implementation (`SqlStore`) that runs on SQLite (embedded default) and later Postgres.
 */
import { Context, type Effect, type Option } from "effect"
import type { StoreError } from "./StoreError.js"
import type { ChatMessage } from "../models/Model.js"
import type {
  ApprovalRecord,
  ApprovalStatus,
  ConversationRecord,
  GrantRecord,
  InstanceRecord,
  RunFilter,
  RunRecord,
  UsageFilter,
  GroupedUsage,
  UsageGrouping,
  UsageSums
} from "./records.js"

/** A message of a conversation, with where it came from. */
export interface StoredMessage {
  readonly seq: number
  readonly runId: string
  readonly message: ChatMessage
  readonly createdAt: number
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
  readonly getConversation: (id: string) => Effect.Effect<Option.Option<ConversationRecord>, StoreError>
  readonly listMessages: (conversationId: string) => Effect.Effect<ReadonlyArray<StoredMessage>, StoreError>
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
}>() {}
