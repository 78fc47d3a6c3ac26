/**
 * The store's statements on PostgreSQL are prepared under names, once a connection. Where the
 * server does not hold what the connection prepared (a pooler in transaction mode in between hands
 * the statement to another of its server connections; here `DEALLOCATE ALL` on the same one), the
 * statement is sent again unnamed, and names are not used from then on: nothing fails. The same
 * when a table changed under a prepared statement (a newer version's migration, in a rolling
 * upgrade), which the server refuses to run as prepared once its rows' shape changed.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { Database } from "../../src/durable/Database.js"
import * as PgDatabase from "../../src/durable/PgDatabase.js"
import { freshSchema, skipPostgres } from "../support/postgres.js"

const count = { sql: "SELECT COUNT(*)::int AS n FROM foundry_instances WHERE agent = ?", params: ["a"] }
const add = (id: string) => ({
  statements: [{ sql: "INSERT INTO foundry_instances (agent, id, context, created_at, updated_at) VALUES ('a', ?, '{}', 0, 0)", params: [id] }]
})
/** The server forgets what the connection prepared; the connection still believes it prepared. */
const forget = { sql: "DEALLOCATE ALL", params: [] }
/** What the connection it runs on holds prepared (names and texts). */
const prepared = { sql: "SELECT name, statement FROM pg_prepared_statements ORDER BY name", params: [] }

const database = Effect.gen(function*() {
  return Context.get(yield* Layer.build(PgDatabase.layer(yield* freshSchema)), Database)
})

describe.skipIf(skipPostgres)("PostgreSQL's named statements", () => {
  it.scopedLive("a read the server no longer holds prepared is sent again unnamed, and reads go on", () =>
    Effect.gen(function*() {
      const store = yield* database
      // Prepared on the connection it ran on; the pool hands the last one back first.
      expect(yield* store.read(count)).toEqual([{ n: 0 }])
      expect((yield* store.read(prepared)).map((row) => row["statement"])).toContain("SELECT COUNT(*)::int AS n FROM foundry_instances WHERE agent = $1")
      yield* store.read(forget)
      expect(yield* store.read(count)).toEqual([{ n: 0 }])
      expect(yield* store.read(count)).toEqual([{ n: 0 }])
      // Named no more: nothing prepared again on that connection.
      expect(yield* store.read(prepared)).toEqual([])
    }), 30_000)

  it.scopedLive("a batch the server no longer holds prepared is written again unnamed, and writes go on", () =>
    Effect.gen(function*() {
      const store = yield* database
      const preparedOnWriter = Effect.map(store.write({ statements: [prepared] }), (written) =>
        written._tag === "Written" ? (written.rows[0] ?? []).map((row) => row["name"]) : [])
      expect((yield* store.write(add("one")))._tag).toBe("Written")
      expect((yield* preparedOnWriter).length).toBeGreaterThan(0)
      yield* store.write({ statements: [forget] })
      // The same statement again, on the writer's one connection.
      expect((yield* store.write(add("two")))._tag).toBe("Written")
      expect((yield* store.write(add("three")))._tag).toBe("Written")
      expect(yield* store.read(count)).toEqual([{ n: 3 }])
      expect(yield* preparedOnWriter).toEqual([])
    }), 30_000)

  it.scopedLive("a read whose table changed shape under it (another version's migration) is sent again unnamed", () =>
    Effect.gen(function*() {
      const store = yield* database
      const all = { sql: "SELECT * FROM foundry_instances WHERE agent = ?", params: ["a"] }
      yield* store.write(add("one"))
      expect(yield* store.read(all)).toHaveLength(1)
      yield* store.read({ sql: "ALTER TABLE foundry_instances ADD COLUMN added_later INTEGER", params: [] })
      const [row] = yield* store.read(all)
      expect(row).toHaveProperty("added_later", null)
    }), 30_000)

  it.scopedLive("a statement has the same name in every process, as a pooler may hand it to another's connection", () =>
    Effect.gen(function*() {
      const url = yield* freshSchema
      const one = Context.get(yield* Layer.build(PgDatabase.layer(url)), Database)
      const two = Context.get(yield* Layer.build(PgDatabase.layer(url)), Database)
      // Two statements first in one, none in the other, then the same one in both.
      yield* one.read({ sql: "SELECT 1 AS one WHERE 1 = ?", params: [1] })
      yield* one.read({ sql: "SELECT 2 AS two WHERE 2 = ?", params: [2] })
      yield* one.read(count)
      yield* two.read(count)
      const nameOf = (rows: ReadonlyArray<Readonly<Record<string, unknown>>>) =>
        rows.find((row) => String(row["statement"]).includes("FROM foundry_instances"))?.["name"]
      const inOne = nameOf(yield* one.read(prepared))
      expect(inOne).toEqual(expect.stringMatching(/^foundry_/))
      expect(nameOf(yield* two.read(prepared))).toBe(inOne)
    }), 30_000)
})
