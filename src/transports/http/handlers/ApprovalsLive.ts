/**
 * The approvals group's handlers.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Dispatcher } from "../../../dispatch/Dispatcher.js"
import { ApprovalStorage } from "../../../durable/ApprovalStorage.js"
import { FoundryApi } from "../api/FoundryApi.js"
import { orStoreUnavailable } from "./storeUnavailable.js"
import { approvalView } from "./toView.js"

/** Handlers for `/api/approvals`. */
export const ApprovalsLive = HttpApiBuilder.group(FoundryApi, "approvals", (handlers) =>
  Effect.gen(function*() {
    const dispatcher = yield* Dispatcher
    const approvals = yield* ApprovalStorage
    return handlers
      .handle("list", ({ urlParams }) =>
        approvals.list({ status: urlParams.status, runId: urlParams.run }).pipe(Effect.map((found) => found.map(approvalView)), orStoreUnavailable))
      .handle("decide", ({ path, payload }) =>
        dispatcher.decide(path.approvalId, payload.decision, payload.reason, payload.scope).pipe(
          Effect.map(approvalView),
          orStoreUnavailable
        ))
  }))
