/**
 * `/api/conversations`: the conversations, most recently active first, and a conversation's transcript.
 */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { ConversationNotFound } from "../../../dispatch/Dispatcher.js"
import { ConversationCursor, ConversationPage } from "./conversationViews.js"
import { MessageView } from "./views.js"

/** The conversations group. */
export class ConversationsGroup extends HttpApiGroup.make("conversations").add(
  HttpApiEndpoint.get("list", "/api/conversations")
    .setUrlParams(Schema.Struct({
      agent: Schema.optional(Schema.String),
      /** An instance's conversations (with `agent` when several agents have an instance of that id). */
      instance: Schema.optional(Schema.String),
      /** The next page: the `next` of the page before. */
      before: Schema.optional(ConversationCursor),
      limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 500)))
    }))
    .addSuccess(ConversationPage)
).add(
  HttpApiEndpoint.get("messages", "/api/conversations/:conversationId/messages")
    .setPath(Schema.Struct({ conversationId: Schema.String }))
    .setUrlParams(Schema.Struct({
      /** The next page: the messages after the one with this `seq` (the last of the page before). */
      after: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative())),
      limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 1000)))
    }))
    .addSuccess(Schema.Array(MessageView))
    .addError(ConversationNotFound, { status: 404 })
) {}
