/**
 * Approvals: a person's decision about one tool call, asked for by a tool's `approval` policy or
 * a permission rule, and the conversation grants an approval with scope `conversation` leaves
 * behind. A decision and its grant are written in one transaction.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { ApprovalRecord, type ApprovalStatus, GrantRecord } from "./records.js"
import { failAs, type StoreError } from "./StoreError.js"

/**
 * Which approvals `list` returns: every one, or those of a status, a run, or both; those created
 * after the approval `after` names, or before the one `before` names (the last of the page
 * before, read oldest or newest first), at most `limit`; oldest first, or the newest first with
 * `newestFirst`.
 */
export interface ApprovalFilter {
  readonly status?: ApprovalStatus | undefined
  readonly runId?: string | undefined
  readonly after?: string | undefined
  readonly before?: string | undefined
  readonly limit?: number | undefined
  readonly newestFirst?: boolean | undefined
}

/** The conversation an approval with scope `conversation` approves its tool for. */
export interface GrantScope {
  readonly conversationId: string
}

/** Approval storage. */
export class ApprovalStorage extends Context.Tag("foundry/ApprovalStorage")<ApprovalStorage, {
  readonly get: (id: string) => Effect.Effect<Option.Option<ApprovalRecord>, StoreError>
  readonly find: (runId: string, toolCallId: string) => Effect.Effect<Option.Option<ApprovalRecord>, StoreError>
  /** Approvals oldest first (or the newest first), of one status and one run when those are given. */
  readonly list: (filter: ApprovalFilter) => Effect.Effect<ReadonlyArray<ApprovalRecord>, StoreError>
  /**
   * Decides a pending approval, and with `grant` approves its tool for the rest of that
   * conversation, in one transaction; `None` when it was already decided (a decision applies
   * once). A grant already there stays as it was.
   */
  readonly decide: (
    id: string,
    status: Exclude<ApprovalStatus, "pending">,
    reason: string | undefined,
    grant?: GrantScope
  ) => Effect.Effect<Option.Option<ApprovalRecord>, StoreError>
  /** The conversation's grant for `tool`, if a person gave one. */
  readonly findGrant: (conversationId: string, tool: string) => Effect.Effect<Option.Option<GrantRecord>, StoreError>
}>() {}

/** Approval storage on the database's `SqlClient`. */
export const layer = Layer.effect(
  ApprovalStorage,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // An approval with the scope of its decision: `conversation` when a grant names it.
    const approvals = sql`SELECT a.*, CASE WHEN EXISTS (SELECT 1 FROM foundry_grants g WHERE g.approval_id = a.id)
      THEN 'conversation' ELSE 'once' END AS scope FROM foundry_approvals a`
    const byId = SqlSchema.findOne({
      Request: Schema.String,
      Result: ApprovalRecord,
      execute: (id) => sql`${approvals} WHERE a.id = ${id}`
    })
    const byCall = SqlSchema.findOne({
      Request: Schema.Struct({ runId: Schema.String, toolCallId: Schema.String }),
      Result: ApprovalRecord,
      execute: ({ runId, toolCallId }) => sql`${approvals} WHERE a.run_id = ${runId} AND a.tool_call_id = ${toolCallId}`
    })
    const grantByTool = SqlSchema.findOne({
      Request: Schema.Struct({ conversationId: Schema.String, tool: Schema.String }),
      Result: GrantRecord,
      execute: ({ conversationId, tool }) => sql`SELECT * FROM foundry_grants WHERE conversation_id = ${conversationId} AND tool = ${tool}`
    })
    const decodeApprovals = Schema.decodeUnknown(Schema.Array(ApprovalRecord))

    return ApprovalStorage.of({
      get: (id) => byId(id).pipe(failAs("getApproval")),

      find: (runId, toolCallId) => byCall({ runId, toolCallId }).pipe(failAs("findApproval")),

      // A run's approvals are found through the (run_id, tool_call_id) index, not by reading them all.
      list: ({ after, before, limit, newestFirst, runId, status }) =>
        sql`${approvals} WHERE ${sql.and([
          ...(status === undefined ? [] : [sql`a.status = ${status}`]),
          ...(runId === undefined ? [] : [sql`a.run_id = ${runId}`]),
          ...(after === undefined ? [] : [sql`(a.created_at, a.id) > (SELECT created_at, id FROM foundry_approvals WHERE id = ${after})`]),
          ...(before === undefined ? [] : [sql`(a.created_at, a.id) < (SELECT created_at, id FROM foundry_approvals WHERE id = ${before})`])
        ])} ORDER BY ${newestFirst === true ? sql`a.created_at DESC, a.id DESC` : sql`a.created_at, a.id`}${
          limit === undefined ? sql`` : sql` LIMIT ${limit}`
        }`.pipe(
          Effect.flatMap(decodeApprovals),
          failAs("listApprovals")
        ),

      decide: (id, status, reason, grant) =>
        sql.withTransaction(Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          // A person decides only before the approval's time is up, whether or not an expiry has looked since.
          const changed = yield* sql<{ readonly agent: string; readonly tool: string }>`UPDATE foundry_approvals
            SET status = ${status}, reason = ${reason ?? null}, decided_at = ${now}
            WHERE id = ${id} AND status = 'pending'${status === "expired" ? sql`` : sql` AND expires_at > ${now}`} RETURNING agent, tool`
          const decided = changed[0]
          if (decided === undefined) return Option.none()
          if (grant !== undefined) {
            yield* sql`INSERT INTO foundry_grants ${
              sql.insert({ conversationId: grant.conversationId, agent: decided.agent, tool: decided.tool, approvalId: id, createdAt: now })
            } ON CONFLICT (conversation_id, tool) DO NOTHING`
          }
          // Read once the grant is written: the approval says whether it is the conversation's (a grant already there stays).
          return yield* byId(id)
        })).pipe(failAs("decideApproval")),

      findGrant: (conversationId, tool) => grantByTool({ conversationId, tool }).pipe(failAs("findGrant"))
    })
  })
)
