/**
 * Migrations that reshape a table keep what it held: a database migrated as an older version left
 * it, with events in it, is brought up to date by the current migrations, once per backend.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Reactivity } from "@effect/experimental"
import { Migrator, SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { Database } from "../../src/durable/Database.js"
import { migrate, migrations } from "../../src/durable/migrations.js"
import * as PgConnection from "../../src/durable/pgConnection.js"
import * as PgDatabase from "../../src/durable/PgDatabase.js"
import * as SqliteDatabase from "../../src/durable/SqliteDatabase.js"
import { insertEvents, type UnsequencedEvent } from "../../src/events/EventStorage.js"
import { insertRun } from "../../src/journal/journalStatements.js"
import { newRun } from "../journal/fixtures.js"
import { freshSchema, skipPostgres } from "../support/postgres.js"

/** The migrations up to and including `last`, as a database of that version ran them. */
const migrateUpTo = (last: string) =>
  Migrator.make({})({
    loader: Migrator.fromRecord(Object.fromEntries(Object.entries(migrations).filter(([name]) => name <= last))),
    table: "foundry_migrations"
  })

const event = (id: string): UnsequencedEvent => ({
  id,
  time: 1_000,
  type: "run.queued",
  traceId: "t1",
  spanId: id,
  parentSpanId: null,
  runId: "r1",
  conversationId: "c1",
  instanceId: "default",
  agent: "support",
  release: "r1",
  data: { input: "hello" }
})

/** A database's storage, not yet migrated, for the test's scope. */
const backends = [
  {
    name: "SQLite",
    skip: false,
    open: Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), "foundry-migrations-"))),
      (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
    ).pipe(Effect.flatMap((dir) => SqliteDatabase.make(join(dir, "foundry.db"))), Effect.provide(Reactivity.layer))
  },
  {
    name: "PostgreSQL",
    skip: skipPostgres,
    open: Effect.flatMap(freshSchema, (url) =>
      Effect.flatMap(Layer.build(PgConnection.clientLayer(url)), (context) => Effect.provide(PgDatabase.make, context)))
  }
]

/** The indexes of `table` by name, each with its definition as the database gives it back (none for SQLite's own). */
const indexesOf = (sql: SqlClient.SqlClient, table: string) =>
  sql.onDialectOrElse({
    // This test's schema only: other test files' schemas in the same database have the table too.
    pg: () =>
      sql<{ readonly name: string; readonly definition: string | null }>`SELECT indexname AS name, indexdef AS definition FROM pg_indexes
        WHERE tablename = ${table} AND schemaname = current_schema()`,
    orElse: () =>
      sql<{ readonly name: string; readonly definition: string | null }>`SELECT name, sql AS definition FROM sqlite_master WHERE type = 'index' AND tbl_name = ${table}`
  }).pipe(Effect.map((rows) => Object.fromEntries(rows.map((row) => [row.name, (row.definition ?? "").replace(/[()"]/g, "")]))))

/** How the database runs `query`: the plan's text. */
const planOf = (sql: SqlClient.SqlClient, query: string) =>
  sql.onDialectOrElse({
    // A table this small is read whole unless told otherwise: whether the index can serve is the question.
    pg: () =>
      sql.withTransaction(Effect.zipRight(
        sql`SET LOCAL enable_seqscan = off`,
        sql.unsafe<{ readonly "QUERY PLAN": string }>(`EXPLAIN ${query}`)
      )).pipe(Effect.map((rows) => rows.map((row) => row["QUERY PLAN"]).join("\n"))),
    orElse: () =>
      sql.unsafe<{ readonly detail: string }>(`EXPLAIN QUERY PLAN ${query}`).pipe(Effect.map((rows) => rows.map((row) => row.detail).join("\n")))
  })

/** An activation's spec as stored: JSON text, the agent and instance inside it. */
const activationSpec = (agent: string, instance: string) =>
  JSON.stringify({ schedule: "s", agent, instance, message: "m", timing: { at: "2026-07-01T10:00:00Z" }, overlap: "allow", misfire: "run-once" })

for (const backend of backends) {
  describe.skipIf(backend.skip)(`migrations on ${backend.name}`, () => {
    it.scoped("0022 gives the activations stored before their agent and instance from the spec, and finds an instance's by its index", () =>
      Effect.gen(function*() {
        const database: Database["Type"] = yield* backend.open
        const sql = database.sql
        yield* Effect.provideService(migrateUpTo("0021_sparse_run_indexes"), SqlClient.SqlClient, sql)
        const rows: ReadonlyArray<readonly [string, string, string, string]> = [
          ["agent:tmr_a", "agent", "worker", "alpha"],
          ["agent:tmr_b", "agent", "worker", "beta"],
          ["schedule:daily", "schedule", "support", "default"]
        ]
        for (const [id, kind, agent, instance] of rows) {
          yield* sql`INSERT INTO foundry_activations (id, kind, spec, status, next_fire, last_fire, last_run_id, updated_at)
            VALUES (${id}, ${kind}, ${activationSpec(agent, instance)}, 'done', NULL, NULL, NULL, 1000)`
        }

        yield* Effect.provideService(migrate, SqlClient.SqlClient, sql)
        const stored = yield* sql<{ readonly id: string; readonly agent: string; readonly instanceId: string; readonly spec: string }>`
          SELECT id, agent, instance_id, spec FROM foundry_activations ORDER BY id`
        expect(stored).toEqual(rows.map(([id, , agent, instance]) => ({ id, agent, instanceId: instance, spec: activationSpec(agent, instance) })))
        const indexes = yield* indexesOf(sql, "foundry_activations")
        expect(indexes["foundry_activations_by_instance"]).toMatch(/kind, agent, instance_id$/)
        // The plan on SQLite only: PostgreSQL's planner once read this three-row table whole in a full
        // run of the suite, index or not (seen in CI, not reproduced alone).
        if (backend.name === "SQLite") {
          expect(yield* planOf(sql, "SELECT * FROM foundry_activations WHERE kind = 'agent' AND agent = 'worker' AND instance_id = 'alpha'"))
            .toContain("foundry_activations_by_instance")
        }
      }))

    it.scoped("0024 gives the suspended runs stored before when they were last suspended or resumed, from their events", () =>
      Effect.gen(function*() {
        const database: Database["Type"] = yield* backend.open
        const sql = database.sql
        yield* Effect.provideService(migrateUpTo("0023_deliveries_by_time"), SqlClient.SqlClient, sql)
        const run = (id: string, status: string) => [insertRun(newRun(id, { conversationId: `c-${id}` }), 1_000, null), {
          sql: "UPDATE foundry_runs SET status = ? WHERE id = ?",
          params: [status, id]
        }]
        const at = (id: string, time: number) => ({ ...event(`${id}-${time}`), runId: id, time })
        const suspended = (id: string, time: number): UnsequencedEvent =>
          ({ ...at(id, time), type: "run.suspended", data: { reason: "approval", approvalId: "a1", tool: "pay" } })
        const moved = (id: string, type: "run.suspended" | "run.resumed" | "run.started", time: number): UnsequencedEvent =>
          type === "run.suspended" ? suspended(id, time) : { ...at(id, time), type, data: { input: "hello", model: "demo" } }
        yield* database.write({
          statements: [
            ...run("s1", "suspended"),
            ...run("s2", "suspended"),
            ...run("s3", "suspended"),
            ...run("r4", "running"),
            insertEvents([
              moved("s1", "run.suspended", 1_100),
              moved("s1", "run.resumed", 1_200),
              moved("s1", "run.suspended", 1_300),
              moved("s1", "run.started", 1_400),
              moved("s2", "run.suspended", 1_500),
              moved("r4", "run.suspended", 1_600)
            ])
          ]
        })

        yield* Effect.provideService(migrate, SqlClient.SqlClient, sql)
        const stored = yield* sql<{ readonly id: string; readonly movedAt: number | string | null }>`SELECT id, moved_at FROM foundry_runs ORDER BY id`
        // s3's events are gone (pruned): none; r4 is not suspended.
        expect(stored.map((row) => [row.id, row.movedAt === null ? null : Number(row.movedAt)])).toEqual([
          ["r4", null],
          ["s1", 1_300],
          ["s2", 1_500],
          ["s3", null]
        ])
      }))

    it.scoped("0021 indexes only the runs with an idempotency key or a parent; a key stays unique and is found by its index", () =>
      Effect.gen(function*() {
        const database: Database["Type"] = yield* backend.open
        const sql = database.sql
        yield* Effect.provideService(migrateUpTo("0020_runs_in_flight_by_conversation"), SqlClient.SqlClient, sql)
        const insert = (id: string, idempotencyKey?: string) =>
          database.write({ statements: [insertRun(newRun(id, idempotencyKey === undefined ? {} : { idempotencyKey }), 1_000, null)] })
        yield* insert("r1", "k1")
        yield* insert("r2")
        const before = yield* sql`SELECT * FROM foundry_runs ORDER BY id`

        // Up to 0021 only: later migrations add columns to the rows.
        yield* Effect.provideService(migrateUpTo("0021_sparse_run_indexes"), SqlClient.SqlClient, sql)
        expect(yield* sql`SELECT * FROM foundry_runs ORDER BY id`).toEqual(before)
        const indexes = yield* indexesOf(sql, "foundry_runs")
        expect(Object.keys(indexes).filter((name) => /by_(idempotency_key|parent)$/.test(name)).sort()).toEqual(["foundry_runs_by_idempotency_key", "foundry_runs_by_parent"])
        expect(indexes["foundry_runs_by_idempotency_key"]).toMatch(/UNIQUE INDEX .*WHERE idempotency_key IS NOT NULL$/)
        expect(indexes["foundry_runs_by_parent"]).toMatch(/WHERE parent_run_id IS NOT NULL$/)
        // Runs without a key are many; a key used twice is refused as before.
        yield* insert("r3")
        expect((yield* Effect.either(insert("r4", "k1")))._tag).toBe("Left")
        expect(yield* planOf(sql, "SELECT * FROM foundry_runs WHERE idempotency_key = 'k1'")).toContain("foundry_runs_by_idempotency_key")
        // A parent's children, as the runs waiting on them are looked for.
        expect(yield* planOf(sql, "SELECT 1 FROM foundry_runs c WHERE c.parent_run_id = 'r1' AND c.parent_tool_call_id IS NOT NULL")).toContain("foundry_runs_by_parent")
        const found = yield* sql<{ readonly id: string }>`SELECT id FROM foundry_runs WHERE idempotency_key = ${"k1"}`
        expect(found.map((row) => row.id)).toEqual(["r1"])
      }))

    it.scoped("0016 keeps every event, the indexes reads use and where seq stood, and no longer refuses a repeated id", () =>
      Effect.gen(function*() {
        const database: Database["Type"] = yield* backend.open
        const sql = database.sql
        // A schema shared with another application, which already has the name PostgreSQL would
        // give the events' unique constraint: it names it otherwise.
        yield* sql.onDialectOrElse({ pg: () => sql`CREATE TABLE other_app (x TEXT CONSTRAINT events_id_key UNIQUE)`, orElse: () => Effect.void })
        yield* Effect.provideService(migrateUpTo("0015_environments"), SqlClient.SqlClient, sql)
        yield* database.write({ statements: [insertEvents([event("e1"), { ...event("e2"), parentSpanId: "e1", type: "run.started", data: { input: "hello", model: "demo" } }, event("e3")])] })
        // The newest event pruned: seq must not be given out again.
        yield* sql`DELETE FROM foundry_events WHERE id = 'e3'`
        const repeated = yield* Effect.either(database.write({ statements: [insertEvents([event("e1")])] }))
        expect(repeated._tag).toBe("Left")
        const before = yield* sql`SELECT * FROM foundry_events ORDER BY seq`

        yield* Effect.provideService(migrate, SqlClient.SqlClient, sql)
        expect(yield* sql`SELECT * FROM foundry_events ORDER BY seq`).toEqual(before)
        const written = yield* database.write({ statements: [insertEvents([event("e4"), event("e1")])] })
        const seqs = (written._tag === "Written" ? written.rows[0] ?? [] : []).map((row) => Number(row.seq))
        // Past the pruned event's 3 (PostgreSQL's sequence also skips the refused insert's number).
        expect(seqs.length === 2 && (seqs[0] ?? 0) > 3 && seqs[1] === (seqs[0] ?? 0) + 1).toBe(true)
        const stored = yield* sql<{ readonly id: string; readonly seq: number }>`SELECT id, seq FROM foundry_events ORDER BY seq`
        expect(stored.map((row) => [row.id, Number(row.seq)])).toEqual([["e1", 1], ["e2", 2], ["e4", seqs[0]], ["e1", seqs[1]]])
        expect(Object.keys(yield* indexesOf(sql, "foundry_events")).sort()).toEqual(
          backend.name === "SQLite"
            ? ["events_by_run", "events_by_time"]
            : ["events_by_run", "events_by_time", "events_pkey"]
        )
      }))
  })
}
