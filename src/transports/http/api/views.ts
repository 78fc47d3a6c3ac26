/**
 * The JSON shapes the HTTP API speaks, as schemas (they are also the OpenAPI document's).
 */
import { Schema } from "effect"
import { RunStatus } from "../../../durable/records.js"

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
  finishedAt: Schema.optional(Schema.Number)
})
export type RunView = typeof RunView.Type

/** A message of a conversation's transcript. */
export const MessageView = Schema.Struct({
  seq: Schema.Number,
  runId: Schema.String,
  role: Schema.Literal("user", "assistant", "tool"),
  content: Schema.String,
  toolCalls: Schema.optional(Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String, arguments: Schema.String }))),
  toolCallId: Schema.optional(Schema.String),
  name: Schema.optional(Schema.String),
  createdAt: Schema.Number
})
export type MessageView = typeof MessageView.Type
