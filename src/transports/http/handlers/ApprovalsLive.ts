/**
 * The approvals group's handlers.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Dispatcher } from "../../../dispatch/Dispatcher.js"
import { Store } from "../../../durable/Store.js"
import { FoundryApi } from "../api/FoundryApi.js"
import { orStoreUnavailable } from "./storeUnavailable.js"
import { approvalView } from "./toView.js"

/** Handlers for `/api/approvals`. */
export const ApprovalsLive = HttpApiBuilder.group(FoundryApi, "approvals", (handlers) =>
  Effect.gen(function*() {
    const dispatcher = yield* Dispatcher
    const store = yield* Store
    return handlers
      .handle("list", ({ urlParams }) =>
        store.listApprovals(urlParams.status).pipe(Effect.map((approvals) => approvals.map(approvalView)), orStoreUnavailable))
      .handle("decide", ({ path, payload }) =>
        dispatcher.decide(path.approvalId, payload.decision, payload.reason, payload.scope).pipe(
          Effect.map(approvalView),
          orStoreUnavailable
        ))
  }))
