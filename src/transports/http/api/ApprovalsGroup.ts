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
 * approvals only grow, and a client that wants them all pages with `before` (or `after`).
 */
export const approvalsPageSize = 100

/**
 * The query of `GET /api/approvals`. A cursor pages on in the order its page was read: `before`
 * newest first, `after` oldest first. The other order with a cursor would start from the far end
 * of what is left (the newest of all those after it), not from the cursor, so it is refused.
 */
export const ApprovalsQuery = Schema.Struct({
  status: Schema.optional(ApprovalStatus),
  /** The approvals one run asked for. */
  run: Schema.optional(Schema.String),
  /** The next page of a list read oldest first: the approvals after this approval id (the last of the page before), oldest first. */
  after: Schema.optional(Schema.String),
  /** The next page of a list read newest first: the approvals before this approval id (the last of the page before), newest first. */
  before: Schema.optional(Schema.String),
  /** `newest` first (the default, and with `before`) or `oldest` first (the default with `after`). */
  order: Schema.optional(Schema.Literal("newest", "oldest")),
  /** At most this many (default 100). */
  limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 1000)))
}).pipe(
  Schema.filter((query) =>
    query.after !== undefined && query.before !== undefined
      ? "after and before: pass one cursor, the last approval's id of the page before"
      : query.after !== undefined && query.order === "newest"
      ? "after pages on oldest first: to page newest first, pass the last approval's id of the page before as before"
      : query.before !== undefined && query.order === "oldest"
      ? "before pages on newest first: to page oldest first, pass the last approval's id of the page before as after"
      : undefined
  )
)

/** The approvals group. */
export class ApprovalsGroup extends HttpApiGroup.make("approvals")
  .add(
    HttpApiEndpoint.get("list", "/api/approvals")
      .setUrlParams(ApprovalsQuery)
      .addSuccess(Schema.Array(ApprovalView))
      .addError(ApprovalNotFound, { status: 404 })
      .annotate(
        OpenApi.Description,
        `At most \`limit\` approvals (default ${approvalsPageSize}), the newest first; \`order=oldest\` lists them from the oldest. ` +
          "To page on, pass the last approval's id of a page: as `before` when it was read newest first (the next page has the older ones, " +
          "newest first), as `after` when it was read oldest first (the newer ones, oldest first). `after` with `order=newest`, " +
          "`before` with `order=oldest`, or both cursors at once are a 400."
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
