/**
 * The conversations group's handlers.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { ConversationNotFound } from "../../../dispatch/Dispatcher.js"
import { Store } from "../../../durable/Store.js"
import { FoundryApi } from "../api/FoundryApi.js"
import { orStoreUnavailable } from "./storeUnavailable.js"
import { messageView } from "./toView.js"

/** Handlers for `/api/conversations`. */
export const ConversationsLive = HttpApiBuilder.group(FoundryApi, "conversations", (handlers) =>
  Effect.gen(function*() {
    const store = yield* Store
    return handlers.handle("messages", ({ path, urlParams }) =>
      Effect.gen(function*() {
        const conversation = yield* store.getConversation(path.conversationId)
        if (conversation._tag === "None") {
          return yield* new ConversationNotFound({
            conversation: path.conversationId,
            message: `there is no conversation "${path.conversationId}"`
          })
        }
        const messages = yield* store.listMessages(path.conversationId, urlParams)
        return messages.map(messageView)
      }).pipe(orStoreUnavailable))
  }))
