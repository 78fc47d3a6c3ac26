/**
 * The cluster group's handlers: the cluster's status, and a conversation's runner.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { ClusterStatus } from "../../../dispatch/ClusterStatus.js"
import { FoundryApi } from "../api/FoundryApi.js"
import { orStoreUnavailable } from "./storeUnavailable.js"

/** Handlers for `/api/cluster`. */
export const ClusterLive = HttpApiBuilder.group(FoundryApi, "cluster", (handlers) =>
  Effect.map(ClusterStatus, (cluster) =>
    handlers
      .handle("status", () => orStoreUnavailable(cluster.view))
      .handle("locate", ({ path }) => orStoreUnavailable(cluster.locate(path.conversationId)))))
