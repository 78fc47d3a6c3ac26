/**
 * The SQLite store's reads of one turn of the event loop share a read transaction, through
 * `Database.read` on a real file with a second connection standing for another process: the
 * reads of a turn see the database as of its first read, the next turn sees another process's
 * commit, and this process's own writes, a client's transaction and a failed read all end it
 * first, so that nothing runs inside it but reads.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import Sqlite from "better-sqlite3"
import { Effect } from "effect"
import { Database } from "../../src/durable/Database.js"
import { sqliteStore } from "../support/sqliteStore.js"

const count = Effect.flatMap(Database, (db) =>
  Effect.map(db.read({ sql: "SELECT COUNT(*) AS n FROM notes", params: [] }), (rows) => Number(rows[0]?.n)))

/** A connection of another process's, writing one note (committed when it returns). */
const otherProcess = (file: string) =>
  Effect.acquireRelease(Effect.sync(() => new Sqlite(file)), (db) => Effect.sync(() => db.close())).pipe(
    Effect.map((db) => ({ note: (text: string) => void db.prepare("INSERT INTO notes (text) VALUES (?)").run(text) }))
  )

/** The next turn of the event loop. */
const nextTurn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

const withNotesTable = Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE notes (text TEXT NOT NULL)`)

describe("the SQLite store's reads of one turn", () => {
  it.live("share one read transaction: another process's commit is seen on the next turn, not between two reads of one", () => {
    const store = sqliteStore("read-snapshot")
    return Effect.gen(function*() {
      yield* withNotesTable
      const other = yield* otherProcess(store.file)
      expect(yield* count).toBe(0)
      other.note("committed between two reads of one turn")
      expect(yield* count).toBe(0)
      yield* nextTurn
      expect(yield* count).toBe(1)
    }).pipe(Effect.scoped, Effect.provide(store.layer))
  })

  it.live("end before this process writes: a write of the turn is committed and seen by the reads after it", () =>
    Effect.gen(function*() {
      yield* withNotesTable
      const db = yield* Database
      const sql = yield* SqlClient.SqlClient
      expect(yield* count).toBe(0)
      // The group commit's batch, then a client's transaction, each begun while the reads' transaction is open.
      yield* db.write({ statements: [{ sql: "INSERT INTO notes (text) VALUES (?)", params: ["batch"] }] })
      expect(yield* count).toBe(1)
      yield* sql.withTransaction(sql`INSERT INTO notes (text) VALUES (${"client transaction"})`)
      expect(yield* count).toBe(2)
      yield* sql`INSERT INTO notes (text) VALUES (${"client statement"})`
      expect(yield* count).toBe(3)
    }).pipe(Effect.provide(sqliteStore("read-snapshot").layer)))

  it.live("end when a read fails: the next read of the turn begins anew and sees what was committed meanwhile", () => {
    const store = sqliteStore("read-snapshot")
    return Effect.gen(function*() {
      yield* withNotesTable
      const db = yield* Database
      const other = yield* otherProcess(store.file)
      expect(yield* count).toBe(0)
      other.note("committed before a read that fails")
      const failed = yield* Effect.either(db.read({ sql: "SELECT * FROM no_such_table", params: [] }))
      expect(failed._tag).toBe("Left")
      expect(yield* count).toBe(1)
    }).pipe(Effect.scoped, Effect.provide(store.layer))
  })
})
