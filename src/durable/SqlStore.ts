/**
 * The `Store` on the `Database`: one implementation for every SQL dialect Foundry supports (the
 * database layer picks the dialect and migrates it).
 */
import { SqlSchema } from "@effect/sql"
import { Effect, Layer, Option, Schema } from "effect"
import { ChatMessage } from "../models/Model.js"
import { ConversationRecord, ConversationSummary, finalStatusesSql, RunRecord } from "./records.js"
import { camelCaseKeys, Database } from "./Database.js"
import { Store } from "./Store.js"
import { failAs } from "./StoreError.js"
import { makeUsageSums } from "./usageSums.js"

const MessageRow = Schema.Struct({
  seq: Schema.Number,
  runId: Schema.String,
  body: Schema.parseJson(ChatMessage),
  createdAt: Schema.Number
})

/** The SQL store over the database, which its layer has migrated. */
export const make = Effect.gen(function*() {
  const database = yield* Database
  const sql = database.sql
  const findConversation = SqlSchema.findOne({
    Request: Schema.String,
    Result: ConversationRecord,
    execute: (id) => sql`SELECT * FROM foundry_conversations WHERE id = ${id}`
  })
  const findRunByKey = SqlSchema.findOne({
    Request: Schema.String,
    Result: RunRecord,
    execute: (key) => sql`SELECT * FROM foundry_runs WHERE idempotency_key = ${key}`
  })
  const decodeRuns = Schema.decodeUnknown(Schema.Array(RunRecord))
  // A run `p` suspends on an approval or on its children; one whose approvals are all decided and
  // whose children have all ended waits on nothing (its process died before it resumed it).
  const readyToResume = sql`p.status = 'suspended'
    AND 'pending' NOT IN (SELECT a.status FROM foundry_approvals a WHERE a.run_id = p.id)
    AND NOT EXISTS (SELECT 1 FROM foundry_runs c WHERE c.parent_run_id = p.id AND c.parent_tool_call_id IS NOT NULL
      AND c.status NOT IN ${sql.literal(finalStatusesSql)})`
  const decodeConversations = Schema.decodeUnknown(Schema.Array(ConversationSummary))
  const decodeMessages = Schema.decodeUnknown(Schema.Array(MessageRow))
  const decodeAgents = Schema.decodeUnknown(Schema.Array(Schema.Struct({ agent: Schema.String })))

  return Store.of({
    ...makeUsageSums(sql),

    getConversation: (id) => findConversation(id).pipe(failAs("getConversation")),

    listMessages: (conversationId, page = {}) =>
      database.read({
        sql: `SELECT seq, run_id AS "runId", body, created_at AS "createdAt" FROM foundry_messages WHERE conversation_id = ?` +
          (page.after === undefined ? "" : " AND seq > ?") + " ORDER BY seq" + (page.limit === undefined ? "" : " LIMIT ?"),
        params: [conversationId, ...(page.after === undefined ? [] : [page.after]), ...(page.limit === undefined ? [] : [page.limit])]
      }).pipe(
        Effect.flatMap(decodeMessages),
        Effect.map((rows) => rows.map((row) => ({ seq: row.seq, runId: row.runId, message: row.body, createdAt: row.createdAt }))),
        failAs("listMessages")
      ),

    getRun: (id) =>
      database.read({ sql: "SELECT * FROM foundry_runs WHERE id = ?", params: [id] }).pipe(
        Effect.flatMap((rows) => decodeRuns(rows.map(camelCaseKeys))),
        Effect.map((runs) => Option.fromNullable(runs[0])),
        failAs("getRun")
      ),

    findRunByIdempotencyKey: (key) => findRunByKey(key).pipe(failAs("findRunByIdempotencyKey")),

    findChildRun: (parentRunId, toolCallId) =>
      sql`SELECT * FROM foundry_runs WHERE parent_run_id = ${parentRunId} AND parent_tool_call_id = ${toolCallId}`.pipe(
        Effect.flatMap(decodeRuns),
        Effect.map((runs) => Option.fromNullable(runs[0])),
        failAs("findChildRun")
      ),

    childRuns: (parentRunId) =>
      sql`SELECT * FROM foundry_runs WHERE parent_run_id = ${parentRunId} ORDER BY created_at, id`.pipe(
        Effect.flatMap(decodeRuns),
        failAs("childRuns")
      ),

    suspendedReadyToResume: sql`SELECT * FROM foundry_runs p WHERE ${readyToResume}`.pipe(
      Effect.flatMap(decodeRuns),
      failAs("suspendedReadyToResume")
    ),

    readyToResume: (id) =>
      sql`SELECT * FROM foundry_runs p WHERE p.id = ${id} AND ${readyToResume}`.pipe(
        Effect.flatMap(decodeRuns),
        Effect.map((runs) => Option.fromNullable(runs[0])),
        failAs("readyToResume")
      ),

    listRuns: (filter) =>
      sql`SELECT * FROM foundry_runs WHERE ${
        sql.and([
          ...(filter.agent === undefined ? [] : [sql`agent = ${filter.agent}`]),
          ...(filter.instanceId === undefined ? [] : [sql`instance_id = ${filter.instanceId}`]),
          ...(filter.conversationId === undefined ? [] : [sql`conversation_id = ${filter.conversationId}`]),
          ...(filter.parentRunId === undefined ? [] : [sql`parent_run_id = ${filter.parentRunId}`]),
          ...(filter.before === undefined
            ? []
            : [sql`(created_at, id) < (SELECT created_at, id FROM foundry_runs WHERE id = ${filter.before})`]),
          ...(filter.status === undefined ? [] : [sql`status = ${filter.status}`])
        ])
      } ORDER BY created_at DESC, id DESC LIMIT ${filter.limit}`.pipe(Effect.flatMap(decodeRuns), failAs("listRuns")),

    // The latest run found by the conversation's run numbers, the count by the same index.
    listConversations: (filter) =>
      sql`SELECT c.id, c.agent, c.instance_id, c.created_at, c.updated_at,
          (SELECT CAST(COUNT(*) AS INTEGER) FROM foundry_runs r WHERE r.conversation_id = c.id) AS runs,
          l.id AS last_run_id, l.status AS last_run_status, l.created_at AS last_run_created_at, l.input AS last_run_input
        FROM foundry_conversations c
        LEFT JOIN foundry_runs l ON l.id = (SELECT r.id FROM foundry_runs r WHERE r.conversation_id = c.id
          ORDER BY r.seq DESC, r.created_at DESC, r.id DESC LIMIT 1)
        WHERE ${
        sql.and([
          ...(filter.agent === undefined ? [] : [sql`c.agent = ${filter.agent}`]),
          ...(filter.instanceId === undefined ? [] : [sql`c.instance_id = ${filter.instanceId}`]),
          ...(filter.before === undefined ? [] : [sql`(c.updated_at, c.id) < (${filter.before.updatedAt}, ${filter.before.id})`])
        ])
      } ORDER BY c.updated_at DESC, c.id DESC LIMIT ${filter.limit}`.pipe(Effect.flatMap(decodeConversations), failAs("listConversations")),

    // Agents named, rather than the id alone: the primary key (agent, id) answers it.
    agentsWithInstance: (id, agents) =>
      sql`SELECT agent FROM foundry_instances WHERE ${sql.in("agent", agents)} AND id = ${id} ORDER BY agent`.pipe(
        Effect.flatMap(decodeAgents),
        Effect.map((rows) => rows.map((row) => row.agent)),
        failAs("agentsWithInstance")
      ),

    unfinishedRuns: sql`SELECT * FROM foundry_runs WHERE status IN ('queued', 'running') ORDER BY created_at`.pipe(
      Effect.flatMap(decodeRuns),
      failAs("unfinishedRuns")
    )
  })
})

/** The SQL store as a layer over the database's `SqlClient` (migrated by the database layer). */
export const layer = Layer.effect(Store, make)
