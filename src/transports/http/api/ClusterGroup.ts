/**
 * Where work runs: the runners of a cluster and the shards they hold, and which runner owns a
 * conversation. A single process answers `mode: "local"`.
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { ClusterView, ConversationPlacement } from "../../../dispatch/ClusterStatus.js"
import { ConversationNotFound } from "../../../dispatch/Dispatcher.js"

/** The cluster group. */
export class ClusterGroup extends HttpApiGroup.make("cluster")
  .add(HttpApiEndpoint.get("status", "/api/cluster").addSuccess(ClusterView))
  .add(
    HttpApiEndpoint.get("locate")`/api/cluster/conversations/${HttpApiSchema.param("conversationId", Schema.String)}`
      .addSuccess(ConversationPlacement)
      .addError(ConversationNotFound, { status: 404 })
  )
{}
