/**
 * The `Store` on `@effect/sql`: one implementation for every SQL dialect Foundry supports, and a
 * layer per database (`layerSqlite` is the embedded default).
 */
import { FileSystem, Path } from "@effect/platform"
import { Migrator, SqlClient, SqlSchema } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Clock, Effect, Layer, Schema, String as Str } from "effect"
import { FoundryEvent } from "../events/FoundryEvent.js"
import { ChatMessage } from "../models/Model.js"
import { migrations } from "./migrations.js"
import { ConversationRecord, InstanceRecord, RunRecord } from "./records.js"
import { Store, StoreError } from "./Store.js"

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
  yield* Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: "foundry_migrations" }).pipe(
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
  const decodeRuns = Schema.decodeUnknown(Schema.Array(RunRecord))
  const decodeEvents = Schema.decodeUnknown(Schema.Array(EventRow))
  const decodeMessages = Schema.decodeUnknown(Schema.Array(MessageRow))

  return Store.of({
    ensureInstance: (agent, id, context = {}) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        yield* sql`INSERT INTO instances ${
          sql.insert({ agent, id, context: JSON.stringify(context), createdAt: now, updatedAt: now })
        } ON CONFLICT (agent, id) DO NOTHING`
        const found = yield* findInstance({ agent, id })
        return yield* found
      }).pipe(failAs("ensureInstance")),

    createConversation: (id, agent, instanceId) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        yield* sql`INSERT INTO conversations ${sql.insert({ id, agent, instanceId, createdAt: now, updatedAt: now })}`
        return new ConversationRecord({ id, agent, instanceId, createdAt: now, updatedAt: now })
      }).pipe(failAs("createConversation")),

    getConversation: (id) => findConversation(id).pipe(failAs("getConversation")),

    appendMessage: (conversationId, runId, message) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        yield* sql`INSERT INTO messages (conversation_id, seq, run_id, body, created_at)
          SELECT ${conversationId}, COALESCE(MAX(seq), 0) + 1, ${runId}, ${encodeMessage(message)}, ${now}
          FROM messages WHERE conversation_id = ${conversationId}`
        yield* sql`UPDATE conversations SET updated_at = ${now} WHERE id = ${conversationId}`
      }).pipe(failAs("appendMessage")),

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
          ...run,
          status: "queued",
          output: null,
          error: null,
          createdAt: now,
          startedAt: null,
          finishedAt: null
        })
        yield* sql`INSERT INTO runs ${sql.insert({ ...run, status: "queued", createdAt: now })}`
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

    getRun: (id) => findRun(id).pipe(failAs("getRun")),

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
          ...(filter.after === undefined ? [] : [sql`seq > ${filter.after}`])
        ])
      } ORDER BY seq LIMIT ${filter.limit ?? 1000}`.pipe(Effect.flatMap(decodeEvents), failAs("listEvents"))
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

