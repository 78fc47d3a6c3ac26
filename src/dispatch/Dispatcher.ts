/**
 * The Dispatcher: takes a message for an agent, records it as a queued run, and gets it executed.
 * Runs of one conversation execute one at a time in arrival order; runs of different
 * conversations execute concurrently up to the config's limit.
 */
import { Context, type Effect, Schema } from "effect"
import type { RunRecord } from "../durable/records.js"
import type { StoreError } from "../durable/Store.js"

/** A message for an agent. */
export interface RunRequest {
  readonly agent: string
  readonly message: string
  /** The instance; `default` when absent (created on first use). */
  readonly instance?: string | undefined
  /** An existing conversation of that instance; a new one when absent. */
  readonly conversation?: string | undefined
}

/** No agent has that id in the current build. */
export class AgentNotFound extends Schema.TaggedError<AgentNotFound>()("AgentNotFound", {
  agent: Schema.String,
  message: Schema.String
}) {}

/** The conversation does not exist, or belongs to another agent or instance. */
export class ConversationNotFound extends Schema.TaggedError<ConversationNotFound>()("ConversationNotFound", {
  conversation: Schema.String,
  message: Schema.String
}) {}

/** The dispatcher. */
export class Dispatcher extends Context.Tag("foundry/Dispatcher")<Dispatcher, {
  /** Records the run as queued and schedules it; returns at once. */
  readonly submit: (request: RunRequest) => Effect.Effect<RunRecord, AgentNotFound | ConversationNotFound | StoreError>
  /** Resumes runs that were queued or running when the last process stopped. */
  readonly recover: Effect.Effect<number, StoreError>
  /** Waits until the run has ended. */
  readonly await: (runId: string) => Effect.Effect<void>
}>() {}
