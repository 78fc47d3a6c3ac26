/**
 * The JSON shapes the HTTP API speaks, as schemas (they are also the OpenAPI document's).
 */
import { Schema } from "effect"
import { ApprovalStatus, RunStatus } from "../../../durable/records.js"

/**
 * Token and cost sums. `costUsd` covers the turns on priced models; `unpricedTurns` counts turns on
 * a model with no price (their tokens are counted, their cost is not known: add it to the config's
 * `prices`).
 */
export const UsageView = Schema.Struct({
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  costUsd: Schema.Number,
  unpricedTurns: Schema.Number
})
export type UsageView = typeof UsageView.Type

/** A run as clients see it; `output` and `error` appear once the run has them. */
export const RunView = Schema.Struct({
  id: Schema.String,
  status: RunStatus,
  agent: Schema.String,
  instanceId: Schema.String,
  conversationId: Schema.String,
  input: Schema.String,
  output: Schema.optional(Schema.String),
  error: Schema.optional(Schema.String),
  createdAt: Schema.Number,
  startedAt: Schema.optional(Schema.Number),
  finishedAt: Schema.optional(Schema.Number),
  steeredFrom: Schema.optional(Schema.String),
  parentRunId: Schema.optional(Schema.String),
  /** What started the run when it was not a client, e.g. `{ schedule, scheduledFor }`. */
  source: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  /** The release the run started on and executes on; absent for runs stored before releases were recorded. */
  release: Schema.optional(Schema.String),
  /** What the run's model turns used so far. */
  usage: UsageView
})
export type RunView = typeof RunView.Type

/** An approval as clients see it: the tool's input, and the decision once there is one. */
export const ApprovalView = Schema.Struct({
  id: Schema.String,
  runId: Schema.String,
  toolCallId: Schema.String,
  agent: Schema.String,
  tool: Schema.String,
  input: Schema.Unknown,
  status: ApprovalStatus,
  reason: Schema.optional(Schema.String),
  createdAt: Schema.Number,
  expiresAt: Schema.Number,
  decidedAt: Schema.optional(Schema.Number),
  /** `conversation` when it was approved for the rest of its conversation. */
  scope: Schema.Literal("once", "conversation")
})
export type ApprovalView = typeof ApprovalView.Type

/** A message of a conversation's transcript. */
export const MessageView = Schema.Struct({
  seq: Schema.Number,
  runId: Schema.String,
  /** `summary`: a compaction, standing for the messages before `keepFrom` when models are asked. */
  role: Schema.Literal("user", "assistant", "tool", "summary"),
  content: Schema.String,
  toolCalls: Schema.optional(Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String, arguments: Schema.String }))),
  toolCallId: Schema.optional(Schema.String),
  name: Schema.optional(Schema.String),
  keepFrom: Schema.optional(Schema.Number),
  createdAt: Schema.Number
})
export type MessageView = typeof MessageView.Type
