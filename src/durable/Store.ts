/**
 * The Store: instances, conversations, messages, runs and events, kept durably. One interface,
 * with a SQL implementation (`SqlStore`) that runs on SQLite (embedded default) and later Postgres.
 */
import { Context, type Effect, type Option } from "effect"
import type { StoreError } from "./StoreError.js"
import type { ChatMessage } from "../models/Model.js"
import type {
  ConversationFilter,
  ConversationRecord,
  ConversationSummary,
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

/** A page of a conversation's messages: those after the message with seq `after`, at most `limit`. */
export interface MessagePage {
  readonly after?: number | undefined
  readonly limit?: number | undefined
}

/** The durable store. */
export class Store extends Context.Tag("foundry/Store")<Store, {
  readonly getConversation: (id: string) => Effect.Effect<Option.Option<ConversationRecord>, StoreError>
  /** A conversation's messages in order; `page` takes the `limit` first after the message with seq `after`. */
  readonly listMessages: (conversationId: string, page?: MessagePage) => Effect.Effect<ReadonlyArray<StoredMessage>, StoreError>
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
  /**
   * Suspended runs that wait on nothing (no approval pending, no child still going): runs a crash
   * kept from waking after their decision or their children's end.
   */
  readonly suspendedReadyToResume: Effect.Effect<ReadonlyArray<RunRecord>, StoreError>
  /** The run if it is suspended and waits on nothing, as `suspendedReadyToResume` finds them. */
  readonly readyToResume: (id: string) => Effect.Effect<Option.Option<RunRecord>, StoreError>
  readonly listRuns: (filter: RunFilter) => Effect.Effect<ReadonlyArray<RunRecord>, StoreError>
  /** Conversations, most recently active (a run submitted) first, as `filter` selects them. */
  readonly listConversations: (filter: ConversationFilter) => Effect.Effect<ReadonlyArray<ConversationSummary>, StoreError>
  /** Which of `agents` have an instance with the id `id`, in name order: one indexed query, however many agents. */
  readonly agentsWithInstance: (id: string, agents: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<string>, StoreError>
  /** Runs that were queued or running when the process stopped. */
  readonly unfinishedRuns: Effect.Effect<ReadonlyArray<RunRecord>, StoreError>
}>() {}
