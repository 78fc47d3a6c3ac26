/**
 * The shapes `/api/conversations` and an instance's conversations answer, apart from the groups so
 * that the inspector, built for the browser, can name them.
 */
import { Schema } from "effect"
import { RunStatus } from "../../../durable/records.js"
import { opaqueCursor } from "./opaqueCursor.js"

/** A conversation, with its number of runs and its latest run (what it was asked, how it stands). */
export const ConversationView = Schema.Struct({
  id: Schema.String,
  agent: Schema.String,
  instanceId: Schema.String,
  createdAt: Schema.Number,
  /** When its latest run was submitted. */
  updatedAt: Schema.Number,
  runs: Schema.Number,
  lastRun: Schema.NullOr(Schema.Struct({ id: Schema.String, status: RunStatus, createdAt: Schema.Number, input: Schema.String }))
})
export type ConversationView = typeof ConversationView.Type

/**
 * The `before` of a page request and the `next` of a page: where a page ended, its last
 * conversation's `updatedAt` and id (`[updatedAt, id]` to clients, in opaque text).
 */
export const ConversationCursor = opaqueCursor(Schema.transform(
  Schema.Tuple(Schema.Number, Schema.String),
  Schema.Struct({ updatedAt: Schema.Number, id: Schema.String }),
  { strict: true, decode: ([updatedAt, id]) => ({ updatedAt, id }), encode: ({ id, updatedAt }) => [updatedAt, id] as const }
))

/** A page of conversations, most recently active first; `next` is `null` on the last page. */
export const ConversationPage = Schema.Struct({
  conversations: Schema.Array(ConversationView),
  next: Schema.NullOr(ConversationCursor)
})
