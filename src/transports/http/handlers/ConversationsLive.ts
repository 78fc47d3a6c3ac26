/**
 * The conversations group's handlers.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { ConversationNotFound } from "../../../dispatch/Dispatcher.js"
import { Store } from "../../../durable/Store.js"
import { FoundryApi } from "../api/FoundryApi.js"
import { pageOf } from "./pageOf.js"
import { orStoreUnavailable } from "./storeUnavailable.js"
import { conversationView, messageView } from "./toView.js"

/** Handlers for `/api/conversations`. */
export const ConversationsLive = HttpApiBuilder.group(FoundryApi, "conversations", (handlers) =>
  Effect.gen(function*() {
    const store = yield* Store
    return handlers.handle("list", ({ urlParams }) =>
      Effect.gen(function*() {
        const limit = urlParams.limit ?? 50
        // One more than the page, to know whether another follows.
        const found = yield* store.listConversations({ agent: urlParams.agent, instanceId: urlParams.instance, before: urlParams.before, limit: limit + 1 })
        const { next, rows } = pageOf(found, limit, (last) => ({ updatedAt: last.updatedAt, id: last.id }))
        return { conversations: rows.map(conversationView), next }
      }).pipe(orStoreUnavailable))
      .handle("messages", ({ path, urlParams }) =>
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
