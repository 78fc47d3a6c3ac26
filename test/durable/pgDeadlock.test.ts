/**
 * PostgreSQL's writes when two processes' transactions deadlock: PostgreSQL undoes one of them
 * (the victim), and the store writes it again instead of failing it, alone or inside a batch.
 * Two `Database`s on one fresh schema play the two processes; each unit locks two rows in the
 * opposite order of the other's, with a pause between, so that they deadlock for certain.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { Database, type Statement, type WriteUnit } from "../../src/durable/Database.js"
import * as PgDatabase from "../../src/durable/PgDatabase.js"
import { freshSchema, skipPostgres } from "../support/postgres.js"

const set = (id: string, value: string): Statement => ({ sql: "UPDATE foundry_runs SET output = ? WHERE id = ?", params: [value, id] })
const pause: Statement = { sql: "SELECT pg_sleep(0.3)", params: [] }

/** Locks `first`, waits, then locks `second`. */
const crossing = (first: string, second: string, value: string): WriteUnit => ({ statements: [set(first, value), pause, set(second, value)] })

describe.skipIf(skipPostgres)("PostgreSQL writes that deadlock", () => {
  it.scopedLive("the victim is written again: both units are written, nothing fails", () =>
    Effect.gen(function*() {
      const url = yield* freshSchema
      const one = Context.get(yield* Layer.build(PgDatabase.layer(url)), Database)
      const two = Context.get(yield* Layer.build(PgDatabase.layer(url)), Database)
      yield* one.write({
        statements: [
          { sql: "INSERT INTO foundry_instances (agent, id, context, created_at, updated_at) VALUES ('a', 'i', '{}', 0, 0)", params: [] },
          { sql: "INSERT INTO foundry_conversations (id, agent, instance_id, created_at, updated_at) VALUES ('c', 'a', 'i', 0, 0)", params: [] },
          ...["x", "y"].map((id, seq): Statement => ({
            sql: "INSERT INTO foundry_runs (id, agent, instance_id, conversation_id, input, status, created_at, release, seq) VALUES (?, 'a', 'i', 'c', '', 'queued', 0, 'dev', ?)",
            params: [id, seq + 1]
          }))
        ]
      })
      // A batch of two on the first (the victim may be a unit inside a batch), one unit on the second.
      const [batch, alone] = yield* Effect.all([
        Effect.all([one.write(crossing("x", "y", "one")), one.write({ statements: [{ sql: "SELECT 1", params: [] }] })], { concurrency: "unbounded" }),
        Effect.delay(two.write(crossing("y", "x", "two")), "50 millis")
      ], { concurrency: "unbounded" })
      expect([batch[0]._tag, batch[1]._tag, alone._tag]).toEqual(["Written", "Written", "Written"])
      // Whichever went last wrote both rows.
      const rows = yield* one.read({ sql: "SELECT output FROM foundry_runs ORDER BY id", params: [] })
      expect(new Set(rows.map((row) => row.output)).size).toBe(1)
    }), 30_000)
})
