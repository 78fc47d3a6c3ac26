/**
 * The `Store` on `@effect/sql`: one implementation for every SQL dialect Foundry supports, and a
 * layer per database (`layerSqlite` is the embedded default).
 */
import { FileSystem, Path } from "@effect/platform"
import { Migrator, SqlClient, SqlSchema } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Clock, Effect, Layer, Option, Schedule, Schema, String as Str } from "effect"
import { FoundryEvent } from "../events/FoundryEvent.js"
import { ChatMessage } from "../models/Model.js"
import { migrations } from "./migrations.js"
import {
  ActivationRecord,
  ApprovalRecord,
  ConversationRecord,
  GrantRecord,
  InstanceRecord,
  RunRecord,
  type UsageFilter,
  GroupedUsage,
  type UsageGrouping,
  UsageSums
} from "./records.js"
import { LeaseLost, Store, StoreError } from "./Store.js"

const EventRow = Schema.Struct({
  ...FoundryEvent.fields,
  data: Schema.parseJson(FoundryEvent.fields.data)
})

const MessageRow = Schema.Struct({
  seq: Schema.Number,
  runId: Schema.String,
  body: Schema.parseJson(ChatMessage),
  createdAt: Schema.Number
})

const encodeMessage = Schema.encodeSync(Schema.parseJson(ChatMessage))

/** The key columns of each usage grouping, as selected (a day is the UTC midnight the run was created after, in ms). */
const usageKeys: Record<UsageGrouping, { readonly select: string; readonly positions: string }> = {
  day: { select: "(created_at / 86400000) * 86400000 AS day", positions: "1" },
  agent: { select: "agent", positions: "1" },
  instance: { select: "agent, instance_id", positions: "1, 2" },
  conversation: { select: "agent, instance_id, conversation_id", positions: "1, 2, 3" }
}

/** Turns any failure of one store operation into a `StoreError` that says which. */
const failAs = (operation: string) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, StoreError, R> =>
  Effect.mapError(effect, (cause) =>
    new StoreError({
      operation,
      message: typeof cause === "object" && cause !== null && "message" in cause ? String(cause.message) : String(cause)
    }))

/** The SQL store over whichever `SqlClient` is provided; runs the migrations first. */
export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Two processes starting on one fresh database race to migrate it: the loser's statements fail
  // while the winner changes the schema, and a retry finds the migrations done.
  yield* Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: "foundry_migrations" }).pipe(
    Effect.retry({ schedule: Schedule.exponential("50 millis").pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(8))) }),
    failAs("migrate")
  )

  const findInstance = SqlSchema.findOne({
    Request: Schema.Struct({ agent: Schema.String, id: Schema.String }),
    Result: InstanceRecord,
    execute: ({ agent, id }) => sql`SELECT * FROM instances WHERE agent = ${agent} AND id = ${id}`
  })
  const findConversation = SqlSchema.findOne({
    Request: Schema.String,
    Result: ConversationRecord,
    execute: (id) => sql`SELECT * FROM conversations WHERE id = ${id}`
  })
  const findRun = SqlSchema.findOne({
    Request: Schema.String,
    Result: RunRecord,
    execute: (id) => sql`SELECT * FROM runs WHERE id = ${id}`
  })
  const findRunByKey = SqlSchema.findOne({
    Request: Schema.String,
    Result: RunRecord,
    execute: (key) => sql`SELECT * FROM runs WHERE idempotency_key = ${key}`
  })
  const findApprovalById = SqlSchema.findOne({
    Request: Schema.String,
    Result: ApprovalRecord,
    execute: (id) => sql`SELECT * FROM approvals WHERE id = ${id}`
  })
  const findApprovalByCall = SqlSchema.findOne({
    Request: Schema.Struct({ runId: Schema.String, toolCallId: Schema.String }),
    Result: ApprovalRecord,
    execute: ({ runId, toolCallId }) => sql`SELECT * FROM approvals WHERE run_id = ${runId} AND tool_call_id = ${toolCallId}`
  })
  const findGrantByTool = SqlSchema.findOne({
    Request: Schema.Struct({ conversationId: Schema.String, tool: Schema.String }),
    Result: GrantRecord,
    execute: ({ conversationId, tool }) => sql`SELECT * FROM grants WHERE conversation_id = ${conversationId} AND tool = ${tool}`
  })
  const decodeApprovals = Schema.decodeUnknown(Schema.Array(ApprovalRecord))
  const decodeActivations = Schema.decodeUnknown(Schema.Array(ActivationRecord))
  const decodeRuns = Schema.decodeUnknown(Schema.Array(RunRecord))
  const decodeEvents = Schema.decodeUnknown(Schema.Array(EventRow))
  const decodeMessages = Schema.decodeUnknown(Schema.Array(MessageRow))
  const decodeSums = Schema.decodeUnknown(Schema.Array(UsageSums))
  const decodeGroups = Schema.decodeUnknown(Schema.Array(GroupedUsage))

  // Sums are cast back to BIGINT: PostgreSQL sums BIGINTs as NUMERIC, which its driver reads as text.
  const usageSums = sql`COUNT(*) AS runs,
    CAST(COALESCE(SUM(input_tokens), 0) AS BIGINT) AS input_tokens,
    CAST(COALESCE(SUM(output_tokens), 0) AS BIGINT) AS output_tokens,
    COALESCE(SUM(cost_usd), 0) AS cost_usd,
    CAST(COALESCE(SUM(unpriced_turns), 0) AS BIGINT) AS unpriced_turns`
  const usageWhere = (filter: UsageFilter) =>
    sql.and([
      ...(filter.agent === undefined ? [] : [sql`agent = ${filter.agent}`]),
      ...(filter.instanceId === undefined ? [] : [sql`instance_id = ${filter.instanceId}`]),
      ...(filter.conversationId === undefined ? [] : [sql`conversation_id = ${filter.conversationId}`]),
      ...(filter.since === undefined ? [] : [sql`created_at >= ${filter.since}`]),
      ...(filter.until === undefined ? [] : [sql`created_at < ${filter.until}`])
    ])

  /** The instance, created with `context` on first use in one atomic statement; `created` says whether this call made it. */
  const provision = (agent: string, id: string, context: Readonly<Record<string, unknown>>) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const inserted = yield* sql<{ readonly id: string }>`INSERT INTO instances ${
        sql.insert({ agent, id, context: JSON.stringify(context), createdAt: now, updatedAt: now })
      } ON CONFLICT (agent, id) DO NOTHING RETURNING id`
      const instance = yield* Effect.flatten(findInstance({ agent, id }))
      return { instance, created: inserted.length > 0 }
    })

  return Store.of({
    ensureInstance: (agent, id, context = {}) =>
      Effect.map(provision(agent, id, context), (result) => result.instance).pipe(failAs("ensureInstance")),

    provisionInstance: (agent, id) => provision(agent, id, {}).pipe(failAs("provisionInstance")),

    getInstance: (agent, id) => findInstance({ agent, id }).pipe(failAs("getInstance")),

    claimDelivery: (id, webhook) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const claimed = yield* sql<{ readonly id: string }>`INSERT INTO deliveries ${
          sql.insert({ id, webhook, status: "processing", receivedAt: now })
        } ON CONFLICT (id) DO NOTHING RETURNING id`
        if (claimed.length > 0) return { _tag: "claimed" as const }
        const rows = yield* sql<{ readonly status: string; readonly result: string | null }>`SELECT status, result FROM deliveries WHERE id = ${id}`
        const row = rows[0]
        if (row === undefined || row.status !== "done" || row.result === null) return { _tag: "processing" as const }
        const result: unknown = JSON.parse(row.result)
        return { _tag: "done" as const, result }
      }).pipe(failAs("claimDelivery")),

    completeDelivery: (id, result) =>
      sql`UPDATE deliveries SET status = 'done', result = ${JSON.stringify(result)} WHERE id = ${id}`.pipe(
        Effect.asVoid,
        failAs("completeDelivery")
      ),

    listActivations: (kind) =>
      sql`SELECT * FROM activations WHERE kind = ${kind} ORDER BY id`.pipe(Effect.flatMap(decodeActivations), failAs("listActivations")),

    getActivation: (id) =>
      sql`SELECT * FROM activations WHERE id = ${id}`.pipe(
        Effect.flatMap(decodeActivations),
        Effect.map((rows) => Option.fromNullable(rows[0])),
        failAs("getActivation")
      ),

    dueActivations: (now, limit) =>
      sql`SELECT * FROM activations WHERE status = 'active' AND next_fire <= ${now} ORDER BY next_fire LIMIT ${limit}`.pipe(
        Effect.flatMap(decodeActivations),
        failAs("dueActivations")
      ),

    nextActivationTime: sql<{ readonly next: number | null }>`SELECT MIN(next_fire) AS next FROM activations WHERE status = 'active'`.pipe(
      Effect.map((rows) => rows[0]?.next === null || rows[0]?.next === undefined ? null : Number(rows[0].next)),
      failAs("nextActivationTime")
    ),

    saveActivation: (activation) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const row = {
          id: activation.id,
          kind: activation.kind,
          spec: JSON.stringify(activation.spec),
          status: activation.status,
          nextFire: activation.nextFire,
          lastFire: activation.lastFire ?? null,
          lastRunId: activation.lastRunId ?? null,
          updatedAt: now
        }
        yield* sql`INSERT INTO activations ${sql.insert(row)} ON CONFLICT (id) DO UPDATE SET
          spec = excluded.spec, status = excluded.status, next_fire = excluded.next_fire,
          last_fire = excluded.last_fire, last_run_id = excluded.last_run_id, updated_at = excluded.updated_at`
      }).pipe(failAs("saveActivation")),

    deleteActivation: (id) => sql`DELETE FROM activations WHERE id = ${id}`.pipe(Effect.asVoid, failAs("deleteActivation")),

    createConversation: (id, agent, instanceId) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        yield* sql`INSERT INTO conversations ${sql.insert({ id, agent, instanceId, createdAt: now, updatedAt: now })}`
        return new ConversationRecord({ id, agent, instanceId, createdAt: now, updatedAt: now })
      }).pipe(failAs("createConversation")),

    getConversation: (id) => findConversation(id).pipe(failAs("getConversation")),

    appendMessage: (conversationId, runId, message, lease) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const fence = lease === undefined
          ? sql`1 = 1`
          : sql`EXISTS (SELECT 1 FROM conversation_leases WHERE conversation_id = ${conversationId} AND token = ${lease.token})`
        // The fence sits outside the aggregate: an aggregate always yields a row, even over none.
        const inserted = yield* sql<{ readonly seq: number }>`INSERT INTO messages (conversation_id, seq, run_id, body, created_at)
          SELECT ${conversationId}, next.seq, ${runId}, ${encodeMessage(message)}, ${now}
          FROM (SELECT COALESCE(MAX(seq), 0) + 1 AS seq FROM messages WHERE conversation_id = ${conversationId}) next
          WHERE ${fence}
          RETURNING seq`.pipe(failAs("appendMessage"))
        if (inserted.length === 0 && lease !== undefined) {
          return yield* new LeaseLost({ conversationId, token: lease.token })
        }
        yield* sql`UPDATE conversations SET updated_at = ${now} WHERE id = ${conversationId}`.pipe(failAs("appendMessage"))
      }),

    listMessages: (conversationId) =>
      sql`SELECT seq, run_id, body, created_at FROM messages WHERE conversation_id = ${conversationId} ORDER BY seq`.pipe(
        Effect.flatMap(decodeMessages),
        Effect.map((rows) => rows.map((row) => ({ seq: row.seq, runId: row.runId, message: row.body, createdAt: row.createdAt }))),
        failAs("listMessages")
      ),

    createRun: (run) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const record = new RunRecord({
          id: run.id,
          agent: run.agent,
          instanceId: run.instanceId,
          conversationId: run.conversationId,
          input: run.input,
          steeredFrom: run.steeredFrom ?? null,
          parentRunId: run.parentRunId ?? null,
          parentToolCallId: run.parentToolCallId ?? null,
          traceId: run.traceId ?? null,
          parentSpanId: run.parentSpanId ?? null,
          source: run.source ?? null,
          status: "queued",
          output: null,
          error: null,
          createdAt: now,
          startedAt: null,
          finishedAt: null
        })
        yield* sql`INSERT INTO runs ${
          sql.insert({
            id: run.id,
            agent: run.agent,
            instanceId: run.instanceId,
            conversationId: run.conversationId,
            input: run.input,
            status: "queued",
            createdAt: now,
            idempotencyKey: run.idempotencyKey ?? null,
            steeredFrom: run.steeredFrom ?? null,
            parentRunId: run.parentRunId ?? null,
            parentToolCallId: run.parentToolCallId ?? null,
            traceId: run.traceId ?? null,
            parentSpanId: run.parentSpanId ?? null,
            source: run.source === undefined ? null : JSON.stringify(run.source)
          })
        }`
        return record
      }).pipe(failAs("createRun")),

    updateRun: (id, update) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const ends = update.status === "completed" || update.status === "failed" || update.status === "cancelled"
        yield* sql`UPDATE runs SET ${
          sql.update({
            status: update.status,
            ...(update.output === undefined ? {} : { output: update.output }),
            ...(update.error === undefined ? {} : { error: update.error }),
            ...(update.status === "running" ? { startedAt: now } : {}),
            ...(ends ? { finishedAt: now } : {})
          })
        } WHERE id = ${id}`
      }).pipe(failAs("updateRun")),

    addRunUsage: (id, usage) =>
      sql`UPDATE runs SET
          input_tokens = input_tokens + ${usage.inputTokens},
          output_tokens = output_tokens + ${usage.outputTokens},
          cost_usd = cost_usd + ${usage.costUsd ?? 0},
          unpriced_turns = unpriced_turns + ${usage.costUsd === null ? 1 : 0}
        WHERE id = ${id}
        RETURNING 1 AS runs, input_tokens, output_tokens, cost_usd, unpriced_turns`.pipe(
        Effect.flatMap(decodeSums),
        Effect.flatMap((rows) => rows[0] === undefined ? Effect.fail(`there is no run "${id}"`) : Effect.succeed(rows[0])),
        failAs("addRunUsage")
      ),

    sumUsage: (filter) =>
      sql`SELECT ${usageSums} FROM runs WHERE ${usageWhere(filter)}`.pipe(
        Effect.flatMap(decodeSums),
        Effect.map((rows) => rows[0] ?? new UsageSums({ runs: 0, inputTokens: 0, outputTokens: 0, costUsd: 0, unpricedTurns: 0 })),
        failAs("sumUsage")
      ),

    sumUsageBy: (filter, groupBy) => {
      const keys = usageKeys[groupBy]
      return sql`SELECT ${sql.unsafe(keys.select)}, ${usageSums} FROM runs WHERE ${usageWhere(filter)}
        GROUP BY ${sql.unsafe(keys.positions)} ORDER BY ${sql.unsafe(keys.positions)}`.pipe(
        Effect.flatMap(decodeGroups),
        failAs("sumUsageBy")
      )
    },

    getRun: (id) => findRun(id).pipe(failAs("getRun")),

    findRunByIdempotencyKey: (key) => findRunByKey(key).pipe(failAs("findRunByIdempotencyKey")),

    findChildRun: (parentRunId, toolCallId) =>
      sql`SELECT * FROM runs WHERE parent_run_id = ${parentRunId} AND parent_tool_call_id = ${toolCallId}`.pipe(
        Effect.flatMap(decodeRuns),
        Effect.map((runs) => Option.fromNullable(runs[0])),
        failAs("findChildRun")
      ),

    childRuns: (parentRunId) =>
      sql`SELECT * FROM runs WHERE parent_run_id = ${parentRunId} ORDER BY created_at, id`.pipe(
        Effect.flatMap(decodeRuns),
        failAs("childRuns")
      ),

    parentsReadyToResume: sql`SELECT * FROM runs p WHERE p.status = 'suspended'
      AND EXISTS (SELECT 1 FROM runs c WHERE c.parent_run_id = p.id AND c.parent_tool_call_id IS NOT NULL)
      AND NOT EXISTS (SELECT 1 FROM runs c WHERE c.parent_run_id = p.id AND c.parent_tool_call_id IS NOT NULL
        AND c.status NOT IN ('completed', 'failed', 'cancelled'))`.pipe(
      Effect.flatMap(decodeRuns),
      failAs("parentsReadyToResume")
    ),

    listRuns: (filter) =>
      sql`SELECT * FROM runs WHERE ${
        sql.and([
          ...(filter.agent === undefined ? [] : [sql`agent = ${filter.agent}`]),
          ...(filter.status === undefined ? [] : [sql`status = ${filter.status}`])
        ])
      } ORDER BY created_at DESC, id DESC LIMIT ${filter.limit}`.pipe(Effect.flatMap(decodeRuns), failAs("listRuns")),

    unfinishedRuns: sql`SELECT * FROM runs WHERE status IN ('queued', 'running') ORDER BY created_at`.pipe(
      Effect.flatMap(decodeRuns),
      failAs("unfinishedRuns")
    ),

    appendEvents: (events) =>
      events.length === 0
        ? Effect.succeed([])
        : sql.withTransaction(
          Effect.forEach(events, (event) =>
            sql<{ readonly seq: number }>`INSERT INTO events ${
              sql.insert({ ...event, data: JSON.stringify(event.data) })
            } RETURNING seq`.pipe(
              Effect.map((rows): FoundryEvent => ({ ...event, seq: Number(rows[0]?.seq ?? 0) }))
            ))
        ).pipe(failAs("appendEvents")),

    listEvents: (filter) =>
      sql`SELECT * FROM events WHERE ${
        sql.and([
          ...(filter.runId === undefined ? [] : [sql`run_id = ${filter.runId}`]),
          ...(filter.conversationId === undefined ? [] : [sql`conversation_id = ${filter.conversationId}`]),
          ...(filter.instanceId === undefined ? [] : [sql`instance_id = ${filter.instanceId}`]),
          ...(filter.agent === undefined ? [] : [sql`agent = ${filter.agent}`]),
          ...(filter.type === undefined ? [] : [sql`type = ${filter.type}`]),
          ...(filter.since === undefined ? [] : [sql`time >= ${filter.since}`]),
          ...(filter.after === undefined ? [] : [sql`seq > ${filter.after}`])
        ])
      } ORDER BY seq LIMIT ${filter.limit ?? 1000}`.pipe(Effect.flatMap(decodeEvents), failAs("listEvents")),

    pruneEvents: (retention) =>
      Effect.gen(function*() {
        let removed = 0
        if (retention.olderThan !== undefined) {
          const rows = yield* sql<{ readonly seq: number }>`DELETE FROM events WHERE time < ${retention.olderThan} RETURNING seq`
          removed += rows.length
        }
        if (retention.keepLatest !== undefined) {
          const rows = yield* sql<{ readonly seq: number }>`DELETE FROM events
            WHERE seq <= (SELECT MAX(seq) FROM events) - ${retention.keepLatest} RETURNING seq`
          removed += rows.length
        }
        return removed
      }).pipe(failAs("pruneEvents")),

    createApproval: (approval) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        yield* sql`INSERT INTO approvals ${
          sql.insert({ ...approval, input: JSON.stringify(approval.input), status: "pending", createdAt: now })
        } ON CONFLICT (run_id, tool_call_id) DO NOTHING`
        return yield* Effect.flatten(findApprovalByCall({ runId: approval.runId, toolCallId: approval.toolCallId }))
      }).pipe(failAs("createApproval")),

    getApproval: (id) => findApprovalById(id).pipe(failAs("getApproval")),

    findApproval: (runId, toolCallId) => findApprovalByCall({ runId, toolCallId }).pipe(failAs("findApproval")),

    listApprovals: (status) =>
      sql`SELECT * FROM approvals WHERE ${status === undefined ? sql`1 = 1` : sql`status = ${status}`}
        ORDER BY created_at, id`.pipe(Effect.flatMap(decodeApprovals), failAs("listApprovals")),

    decideApproval: (id, status, reason) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const changed = yield* sql<{ readonly id: string }>`UPDATE approvals
          SET status = ${status}, reason = ${reason ?? null}, decided_at = ${now}
          WHERE id = ${id} AND status = 'pending' RETURNING id`
        if (changed.length === 0) return Option.none()
        return yield* findApprovalById(id)
      }).pipe(failAs("decideApproval")),

    grantForConversation: (grant) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        yield* sql`INSERT INTO grants ${sql.insert({ ...grant, createdAt: now })} ON CONFLICT (conversation_id, tool) DO NOTHING`
      }).pipe(failAs("grantForConversation")),

    findGrant: (conversationId, tool) => findGrantByTool({ conversationId, tool }).pipe(failAs("findGrant")),

    acquireLease: (conversationId, owner, ttlMillis) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const rows = yield* sql<{ readonly token: number }>`INSERT INTO conversation_leases (conversation_id, owner, token, expires_at)
          VALUES (${conversationId}, ${owner}, 1, ${now + ttlMillis})
          ON CONFLICT (conversation_id) DO UPDATE SET
            owner = excluded.owner,
            token = conversation_leases.token + 1,
            expires_at = excluded.expires_at
          WHERE conversation_leases.expires_at < ${now} OR conversation_leases.owner = ${owner}
          RETURNING token`
        const row = rows[0]
        return row === undefined ? Option.none() : Option.some({ conversationId, owner, token: Number(row.token) })
      }).pipe(failAs("acquireLease")),

    renewLease: (lease, ttlMillis) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const rows = yield* sql<{ readonly token: number }>`UPDATE conversation_leases SET expires_at = ${now + ttlMillis}
          WHERE conversation_id = ${lease.conversationId} AND token = ${lease.token} RETURNING token`
        return rows.length > 0
      }).pipe(failAs("renewLease")),

    // Released leases expire rather than vanish, so the next grant's token is still larger.
    releaseLease: (lease) =>
      sql`UPDATE conversation_leases SET expires_at = 0
        WHERE conversation_id = ${lease.conversationId} AND token = ${lease.token}`.pipe(
        Effect.asVoid,
        failAs("releaseLease")
      ),

    holdsLease: (lease) =>
      sql<{ readonly token: number }>`SELECT token FROM conversation_leases
        WHERE conversation_id = ${lease.conversationId} AND token = ${lease.token}`.pipe(
        Effect.map((rows) => rows.length > 0),
        failAs("holdsLease")
      )
  })
})

/** The SQL store as a layer over a provided `SqlClient`. */
export const layer = Layer.effect(Store, make)

/** The embedded default: the SQL store on a SQLite file (its folder is created if missing). */
export const layerSqlite = (filename: string) =>
  Layer.unwrapEffect(
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      if (filename !== ":memory:") yield* fs.makeDirectory(path.dirname(filename), { recursive: true })
      return layer.pipe(
        Layer.provide(
          SqliteClient.layer({ filename, transformQueryNames: Str.camelToSnake, transformResultNames: Str.snakeToCamel })
        )
      )
    })
  )

