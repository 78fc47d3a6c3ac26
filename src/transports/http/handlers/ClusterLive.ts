/**
 * The cluster group's handlers: the cluster's status, and a conversation's runner.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { ClusterStatus } from "../../../dispatch/ClusterStatus.js"
import { ConversationNotFound } from "../../../dispatch/Dispatcher.js"
import { Store } from "../../../durable/Store.js"
import { FoundryApi } from "../api/FoundryApi.js"
import { orStoreUnavailable } from "./storeUnavailable.js"

/** Handlers for `/api/cluster`. */
export const ClusterLive = HttpApiBuilder.group(FoundryApi, "cluster", (handlers) =>
  Effect.gen(function*() {
    const cluster = yield* ClusterStatus
    const store = yield* Store
    return handlers
      .handle("status", () => orStoreUnavailable(cluster.view))
      .handle("locate", ({ path }) =>
        Effect.gen(function*() {
          const conversation = yield* store.getConversation(path.conversationId)
          if (Option.isNone(conversation)) {
            return yield* new ConversationNotFound({ conversation: path.conversationId, message: `there is no conversation "${path.conversationId}"` })
          }
          return yield* cluster.locate(path.conversationId)
        }).pipe(orStoreUnavailable))
  }))
