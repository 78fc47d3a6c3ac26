/**
 * The SQLite store syncs every commit (`synchronous = FULL`), read on its own connection after it
 * has written: better-sqlite3's SQLite turns a WAL database to NORMAL (synced only at checkpoints)
 * when the connection next reads the file, unless the connection said otherwise, and the pragma
 * read just after switching to WAL still says FULL.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Database } from "../../src/durable/Database.js"
import { sqliteStore } from "../support/sqliteStore.js"

/** SQLite's `synchronous` on the store's connection: 2 is FULL, 1 NORMAL. */
const synchronous = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(sql<{ readonly synchronous: number }>`PRAGMA synchronous`, (rows) => rows[0]?.synchronous))

describe("the SQLite store's durability", () => {
  it.live("syncs every commit: the connection is in WAL mode with synchronous FULL after it has written and read", () =>
    Effect.gen(function*() {
      const db = yield* Database
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE notes (text TEXT NOT NULL)`
      yield* db.write({ statements: [{ sql: "INSERT INTO notes (text) VALUES (?)", params: ["a step"] }] })
      expect(yield* db.read({ sql: "SELECT text FROM notes", params: [] })).toEqual([{ text: "a step" }])
      const [mode] = yield* sql<{ readonly journalMode: string }>`PRAGMA journal_mode`
      expect(mode?.journalMode).toBe("wal")
      expect(yield* synchronous).toBe(2)
    }).pipe(Effect.provide(sqliteStore("durability").layer)))
})
