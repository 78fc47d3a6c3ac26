/**
 * The approvals group's handlers.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { ApprovalNotFound, Dispatcher } from "../../../dispatch/Dispatcher.js"
import { ApprovalStorage } from "../../../durable/ApprovalStorage.js"
import { approvalsPageSize } from "../api/ApprovalsGroup.js"
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
        Effect.gen(function*() {
          // A cursor that names no approval would read as the end of the list.
          const after = urlParams.after
          if (after !== undefined && Option.isNone(yield* approvals.get(after))) {
            return yield* new ApprovalNotFound({ approvalId: after, message: `after: there is no approval "${after}" to list after` })
          }
          const found = yield* approvals.list({
            status: urlParams.status,
            runId: urlParams.run,
            after,
            limit: urlParams.limit ?? approvalsPageSize,
            // A page after a cursor goes on as the page before it was read: oldest first.
            newestFirst: (urlParams.order ?? (after === undefined ? "newest" : "oldest")) === "newest"
          })
          return found.map(approvalView)
        }).pipe(orStoreUnavailable))
      .handle("decide", ({ path, payload }) =>
        dispatcher.decide(path.approvalId, payload.decision, payload.reason, payload.scope).pipe(
          Effect.map(approvalView),
          orStoreUnavailable
        ))
  }))
