/**
 * Guarded units sharing one group-commit transaction, on both backends: each guard is read after
 * the units before it in the batch were written (it sees what they wrote), a unit whose guard
 * returns no row writes nothing and is told so, and the units after it are written as if it had
 * not been there. (On PostgreSQL the batch goes to the server at once, each guard made to fail
 * the transaction on no row, and goes again without the refused unit.)
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { Database, type Statement, type WriteUnit } from "../../src/durable/Database.js"
import { backends } from "../journal/backends.js"

const insert = (text: string): Statement => ({ sql: "INSERT INTO guarded_notes (text) VALUES (?)", params: [text] })
const present = (text: string): Statement => ({ sql: "SELECT 1 AS present FROM guarded_notes WHERE text = ?", params: [text] })
const absent = (text: string): Statement => ({
  sql: "SELECT 1 AS absent WHERE NOT EXISTS (SELECT 1 FROM guarded_notes WHERE text = ?)",
  params: [text]
})

for (const backend of backends) {
  describe.skipIf(backend.skip)(`guarded units of one batch on ${backend.name}`, () => {
    it.scopedLive("a refused unit writes nothing; the guards after it see the batch's writes before them, as written", () =>
      Effect.gen(function*() {
        const context = yield* Layer.build(yield* backend.fresh)
        const database = Context.get(context, Database)
        yield* Context.get(context, SqlClient.SqlClient).unsafe("CREATE TABLE guarded_notes (text TEXT NOT NULL)")
        const units: ReadonlyArray<WriteUnit> = [
          { statements: [insert("a")] },
          // Sees `a`, written by the unit before it in the same transaction.
          { guards: [present("a")], statements: [insert("b")] },
          { guards: [present("nothing")], statements: [insert("c")] },
          // `c` was not written: this guard passes.
          { guards: [absent("c")], statements: [insert("d")] },
          { guards: [present("b")], statements: [insert("e")] },
          // Every guard of a unit must return a row: one that does not refuses it, whichever it is.
          { guards: [present("a"), present("nothing")], statements: [insert("f")] },
          { guards: [present("a"), absent("f"), present("e")], statements: [insert("g")] }
        ]
        const before = yield* database.stats
        // Handed in together, so that the units share a batch (on PostgreSQL, the first may go alone
        // while the others wait for it).
        const outcomes = yield* Effect.all(units.map((unit) => database.write(unit)), { concurrency: "unbounded" })
        const after = yield* database.stats
        expect(outcomes.map((outcome) => outcome._tag)).toEqual(["Written", "Written", "Refused", "Written", "Written", "Refused", "Written"])
        expect(after.writeTransactions - before.writeTransactions).toBeLessThanOrEqual(2)
        const rows = yield* database.read({ sql: "SELECT text FROM guarded_notes ORDER BY text", params: [] })
        expect(rows.map((row) => row["text"])).toEqual(["a", "b", "d", "e", "g"])
      }), 30_000)
  })
}
