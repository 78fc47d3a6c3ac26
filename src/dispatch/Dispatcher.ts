/**
 * The Dispatcher: takes a message for an agent, records it as a queued run, and gets it executed.
 * Runs of one conversation execute one at a time in arrival order; runs of different
 * conversations execute concurrently up to the config's limit. It also cancels and steers runs
 * and applies approval decisions.
 */
import { Context, type Effect, Schema } from "effect"
import { type CompiledApp, leftOutAgent } from "../compiler/CompiledApp.js"
import type { ApprovalRecord, RunRecord } from "../durable/records.js"
import type { StoreError } from "../durable/StoreError.js"
import type { ChatMessage } from "../models/Model.js"
import { noSuch } from "../text/closest.js"

/** A message for an agent. */
export interface RunRequest {
  readonly agent: string
  readonly message: string
  /** The instance; when absent, the conversation's when one is given, else `default` (created on first use). */
  readonly instance?: string | undefined
  /** An existing conversation of that instance; a new one when absent. */
  readonly conversation?: string | undefined
  /** With `conversation`: a conversation that does not exist yet is created under that id instead of refused. */
  readonly createConversation?: boolean | undefined
  /**
   * Messages recorded in the conversation before `message`, with the run's submission: the
   * history of a client that keeps it itself (an OpenAI-compatible client's earlier messages).
   */
  readonly history?: ReadonlyArray<ChatMessage> | undefined
  /** A repeated submission with the same key returns the first run and starts nothing. */
  readonly idempotencyKey?: string | undefined
  /** The trace and span the run hangs under, when something traced started it (a webhook delivery). */
  readonly trace?: { readonly traceId: string; readonly parentSpanId: string } | undefined
  /** What started the run, recorded with it (e.g. `{ schedule, scheduledFor }`). */
  readonly source?: Readonly<Record<string, unknown>> | undefined
}

/** No agent has that id in the current build. */
export class AgentNotFound extends Schema.TaggedError<AgentNotFound>()("AgentNotFound", {
  agent: Schema.String,
  message: Schema.String
}) {}

/**
 * Why `agent` is no agent of `app`: a build of only the project's sound part left it out (and
 * why), or the build has no agent of that name (and which it has).
 */
export const agentNotFound = (app: CompiledApp, agent: string): AgentNotFound => {
  const leftOut = leftOutAgent(app, agent)
  return new AgentNotFound({
    agent,
    message: leftOut !== undefined
      ? `agent "${agent}" is not served while ${leftOut.file} does not build: ${leftOut.problem}`
      : noSuch("agent", agent, [...app.agents.keys()])
  })
}

/**
 * The instance takes no runs: it is paused or archived, it does not exist and its agent needs a
 * context to make one, or its id is not an instance id (`reason` says which; `message` how to go on).
 */
export class InstanceUnavailable extends Schema.TaggedError<InstanceUnavailable>()("InstanceUnavailable", {
  agent: Schema.String,
  instance: Schema.String,
  reason: Schema.Literal("paused", "archived", "context", "id"),
  message: Schema.String
}) {}

/** The conversation does not exist, or belongs to another agent or instance. */
export class ConversationNotFound extends Schema.TaggedError<ConversationNotFound>()("ConversationNotFound", {
  conversation: Schema.String,
  message: Schema.String
}) {}

/** No run has that id. */
export class RunNotFound extends Schema.TaggedError<RunNotFound>()("RunNotFound", {
  runId: Schema.String,
  message: Schema.String
}) {}

/** The run has already ended, so it cannot be cancelled or steered. */
export class RunAlreadyEnded extends Schema.TaggedError<RunAlreadyEnded>()("RunAlreadyEnded", {
  runId: Schema.String,
  status: Schema.String,
  message: Schema.String
}) {}

/** No approval has that id. */
export class ApprovalNotFound extends Schema.TaggedError<ApprovalNotFound>()("ApprovalNotFound", {
  approvalId: Schema.String,
  message: Schema.String
}) {}

/** The approval was decided already (or expired); a decision applies once. */
export class ApprovalAlreadyDecided extends Schema.TaggedError<ApprovalAlreadyDecided>()("ApprovalAlreadyDecided", {
  approvalId: Schema.String,
  status: Schema.String,
  message: Schema.String
}) {}

/** How far an approval reaches: this one call, or every call of its tool in the conversation. */
export type ApprovalScope = "once" | "conversation"

/** The dispatcher. */
export class Dispatcher extends Context.Tag("foundry/Dispatcher")<Dispatcher, {
  /** Records the run as queued and schedules it; returns at once. */
  readonly submit: (request: RunRequest) => Effect.Effect<RunRecord, AgentNotFound | ConversationNotFound | InstanceUnavailable | StoreError>
  /**
   * Resumes runs that were queued or running when the last process stopped, and from then on takes
   * up those of any process on the store that stops with runs in flight (a server calls it once, as
   * it starts; a one-shot command does not).
   */
  readonly recover: Effect.Effect<number, StoreError>
  /** Waits until the run's current execution has ended (completed, failed, cancelled or suspended). */
  readonly await: (runId: string) => Effect.Effect<void>
  /** Interrupts the run (wherever it is: queued, running, suspended) and marks it cancelled. */
  readonly cancel: (runId: string) => Effect.Effect<RunRecord, RunNotFound | RunAlreadyEnded | StoreError>
  /** Cancels the run and starts a new one in its conversation with `message`, linked to it. */
  readonly steer: (runId: string, message: string) => Effect.Effect<RunRecord, RunNotFound | RunAlreadyEnded | InstanceUnavailable | StoreError>
  /**
   * Applies a person's decision to a pending approval and resumes its run. Approved with scope
   * `"conversation"`, the tool is granted for the run's conversation: later calls there run without asking.
   */
  readonly decide: (
    approvalId: string,
    decision: "approve" | "deny",
    reason: string | undefined,
    scope?: ApprovalScope
  ) => Effect.Effect<ApprovalRecord, ApprovalNotFound | ApprovalAlreadyDecided | StoreError>
}>() {}
