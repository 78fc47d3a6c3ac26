/**
 * `/api/approvals`: what is waiting on a person, and their decisions.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ApprovalAlreadyDecided, ApprovalNotFound } from "../../../dispatch/Dispatcher.js"
import { ApprovalStatus } from "../../../durable/records.js"
import { ApprovalView } from "./views.js"
import { strictBody } from "./strictBody.js"

/**
 * The body of `POST /api/approvals/:approvalId`. `scope` (default `"once"`): `"conversation"`
 * approves this call and every later call of the same tool in the run's conversation; it goes
 * only with `approve`.
 */
export const ApprovalDecision = Schema.Struct({
  decision: Schema.Literal("approve", "deny"),
  reason: Schema.optional(Schema.String),
  scope: Schema.optional(Schema.Literal("once", "conversation"))
}).annotations(strictBody).pipe(
  Schema.filter((body) =>
    body.scope === "conversation" && body.decision !== "approve"
      ? "scope \"conversation\" goes only with decision \"approve\"; a denial applies to its call only"
      : undefined
  )
)

/**
 * The approvals `GET /api/approvals` lists when it is not told how many: a project's decided
 * approvals only grow, and a client that wants them all pages with `after`.
 */
export const approvalsPageSize = 100

/** The approvals group. */
export class ApprovalsGroup extends HttpApiGroup.make("approvals")
  .add(
    HttpApiEndpoint.get("list", "/api/approvals")
      .setUrlParams(Schema.Struct({
        status: Schema.optional(ApprovalStatus),
        /** The approvals one run asked for. */
        run: Schema.optional(Schema.String),
        /** The next page: the approvals after this approval id (the last of the page before), oldest first. */
        after: Schema.optional(Schema.String),
        /** `newest` first (the default without `after`) or `oldest` first (the default with it). */
        order: Schema.optional(Schema.Literal("newest", "oldest")),
        /** At most this many (default 100). */
        limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 1000)))
      }))
      .addSuccess(Schema.Array(ApprovalView))
      .addError(ApprovalNotFound, { status: 404 })
      .annotate(
        OpenApi.Description,
        `At most \`limit\` approvals (default ${approvalsPageSize}), the newest first; \`order=oldest\` lists them from the oldest, ` +
          "and `after` (the last approval's id of a page read oldest first) pages on from there, oldest first unless `order` says otherwise."
      )
  )
  .add(
    HttpApiEndpoint.post("decide", "/api/approvals/:approvalId")
      .setPath(Schema.Struct({ approvalId: Schema.String }))
      .setPayload(ApprovalDecision)
      .addSuccess(ApprovalView)
      .addError(ApprovalNotFound, { status: 404 })
      .addError(ApprovalAlreadyDecided, { status: 409 })
  )
{}
