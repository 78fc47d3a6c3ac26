/**
 * `/api/conversations`: a conversation's transcript.
 */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { ConversationNotFound } from "../../../dispatch/Dispatcher.js"
import { MessageView } from "./views.js"

/** The conversations group. */
export class ConversationsGroup extends HttpApiGroup.make("conversations").add(
  HttpApiEndpoint.get("messages", "/api/conversations/:conversationId/messages")
    .setPath(Schema.Struct({ conversationId: Schema.String }))
    .addSuccess(Schema.Array(MessageView))
    .addError(ConversationNotFound, { status: 404 })
) {}
