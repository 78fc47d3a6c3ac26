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
    // A cursor that names no approval would read as the end of the list.
    const knownCursor = (name: "after" | "before", cursor: string | undefined) =>
      cursor === undefined ? Effect.void : Effect.flatMap(approvals.get(cursor), Option.match({
        onNone: () => Effect.fail(new ApprovalNotFound({ approvalId: cursor, message: `${name}: there is no approval "${cursor}" to list ${name}` })),
        onSome: () => Effect.void
      }))
    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.gen(function*() {
          const { after, before } = urlParams
          yield* knownCursor("after", after)
          yield* knownCursor("before", before)
          const found = yield* approvals.list({
            status: urlParams.status,
            runId: urlParams.run,
            after,
            before,
            limit: urlParams.limit ?? approvalsPageSize,
            // A page after a cursor goes on as the page before it was read (the query refuses the other order).
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
