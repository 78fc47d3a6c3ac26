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

const database = Effect.gen(function*() {
  return Context.get(yield* Layer.build(PgDatabase.layer(yield* freshSchema)), Database)
})

describe.skipIf(skipPostgres)("PostgreSQL's named statements", () => {
  it.scopedLive("a read the server no longer holds prepared is sent again unnamed, and reads go on", () =>
    Effect.gen(function*() {
      const store = yield* database
      // Prepared on the connection it ran on; the pool hands the last one back first.
      expect(yield* store.read(count)).toEqual([{ n: 0 }])
      yield* store.read(forget)
      expect(yield* store.read(count)).toEqual([{ n: 0 }])
      expect(yield* store.read(count)).toEqual([{ n: 0 }])
    }), 30_000)

  it.scopedLive("a batch the server no longer holds prepared is written again unnamed, and writes go on", () =>
    Effect.gen(function*() {
      const store = yield* database
      expect((yield* store.write(add("one")))._tag).toBe("Written")
      yield* store.write({ statements: [forget] })
      // The same statement again, on the writer's one connection.
      expect((yield* store.write(add("two")))._tag).toBe("Written")
      expect((yield* store.write(add("three")))._tag).toBe("Written")
      expect(yield* store.read(count)).toEqual([{ n: 3 }])
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
})
