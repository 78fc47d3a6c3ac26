/**
 * The Store: instances, conversations, messages, runs and events, kept durably. One interface,
 * with a SQL implementation (`SqlStore`) that runs on SQLite (embedded default) and later Postgres.
 */
import { Context, type Effect, type Option, Schema } from "effect"
import type { FoundryEvent } from "../events/FoundryEvent.js"
import type { ChatMessage } from "../models/Model.js"
import type { ConversationRecord, InstanceRecord, RunFilter, RunRecord, RunStatus } from "./records.js"

/** The store could not do what was asked; `operation` says what. */
export class StoreError extends Schema.TaggedError<StoreError>()("StoreError", {
  operation: Schema.String,
  message: Schema.String
}) {}

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
}

/** A change to a run's status, with its output or error when it ends. */
export interface RunUpdate {
  readonly status: RunStatus
  readonly output?: string
  readonly error?: string
}

/** Filters for reading events, oldest first. */
export interface EventFilter {
  readonly runId?: string | undefined
  readonly after?: number | undefined
  readonly limit?: number | undefined
}

/** The durable store. */
export class Store extends Context.Tag("foundry/Store")<Store, {
  /** The instance `id` of `agent`, created with `context` on first use. */
  readonly ensureInstance: (
    agent: string,
    id: string,
    context?: Readonly<Record<string, unknown>>
  ) => Effect.Effect<InstanceRecord, StoreError>
  readonly createConversation: (id: string, agent: string, instanceId: string) => Effect.Effect<ConversationRecord, StoreError>
  readonly getConversation: (id: string) => Effect.Effect<Option.Option<ConversationRecord>, StoreError>
  readonly appendMessage: (conversationId: string, runId: string, message: ChatMessage) => Effect.Effect<void, StoreError>
  readonly listMessages: (conversationId: string) => Effect.Effect<ReadonlyArray<StoredMessage>, StoreError>
  readonly createRun: (run: NewRun) => Effect.Effect<RunRecord, StoreError>
  readonly updateRun: (id: string, update: RunUpdate) => Effect.Effect<void, StoreError>
  readonly getRun: (id: string) => Effect.Effect<Option.Option<RunRecord>, StoreError>
  readonly listRuns: (filter: RunFilter) => Effect.Effect<ReadonlyArray<RunRecord>, StoreError>
  /** Runs that were queued or running when the process stopped. */
  readonly unfinishedRuns: Effect.Effect<ReadonlyArray<RunRecord>, StoreError>
  /** Stores events in one transaction; `seq` is assigned by the store, in order. */
  readonly appendEvents: (events: ReadonlyArray<Omit<FoundryEvent, "seq">>) => Effect.Effect<ReadonlyArray<FoundryEvent>, StoreError>
  readonly listEvents: (filter: EventFilter) => Effect.Effect<ReadonlyArray<FoundryEvent>, StoreError>
}>() {}
