/**
 * SQLite's group commit, through `Database.write` on a real file: units handed in by separate
 * callbacks of one turn of the event loop (as HTTP requests arrive) share one transaction, and a
 * unit written while a `SqlClient` transaction is open on the connection waits for it and is
 * never part of it (it stays written when that transaction rolls back).
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Runtime } from "effect"
import { Database, type WriteUnit } from "../../src/durable/Database.js"
import { sqliteStore } from "../support/sqliteStore.js"

const database = () => sqliteStore("group-commit").layer

const note = (text: string): WriteUnit => ({ statements: [{ sql: "INSERT INTO notes (text) VALUES (?)", params: [text] }] })

const notes = Effect.flatMap(Database, (db) => db.read({ sql: "SELECT text FROM notes ORDER BY text", params: [] }))

const withNotesTable = Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE notes (text TEXT NOT NULL)`)

describe("SQLite's group commit", () => {
  it.live("writes the units of separate event-loop callbacks in one transaction, each acknowledged once committed", () =>
    Effect.gen(function*() {
      yield* withNotesTable
      const db = yield* Database
      const runtime = yield* Effect.runtime<never>()
      const before = yield* db.stats
      // Three callbacks of one turn of the loop, as three requests' handlers would run.
      const written = yield* Effect.promise(() =>
        Promise.all(["a", "b", "c"].map((text) =>
          new Promise<Exit.Exit<unknown, unknown>>((resolve) =>
            setImmediate(() => Runtime.runCallback(runtime)(db.write(note(text)), { onExit: resolve }))
          )
        ))
      )
      const after = yield* db.stats
      expect(written.every(Exit.isSuccess)).toBe(true)
      expect(after.writeTransactions - before.writeTransactions).toBe(1)
      expect(yield* notes).toEqual([{ text: "a" }, { text: "b" }, { text: "c" }])
    }).pipe(Effect.provide(database())))

  it.live("waits out a client transaction open on the connection, and is not part of it", () =>
    Effect.gen(function*() {
      yield* withNotesTable
      const db = yield* Database
      const sql = yield* SqlClient.SqlClient
      const inside = yield* Deferred.make<void>()
      const finish = yield* Deferred.make<void>()
      // A client transaction that writes, then waits (holding the connection) and rolls back.
      const client = yield* sql.withTransaction(
        Effect.gen(function*() {
          yield* sql`INSERT INTO notes (text) VALUES ('rolled back')`
          yield* Deferred.succeed(inside, undefined)
          yield* Deferred.await(finish)
          return yield* Effect.fail("roll back" as const)
        })
      ).pipe(Effect.exit, Effect.fork)
      yield* Deferred.await(inside)
      const unit = yield* Effect.fork(db.write(note("journal")))
      yield* Effect.sleep("50 millis")
      // Still waiting: writing now would have put it inside the client's transaction.
      expect(unit.unsafePoll()).toBeNull()
      yield* Deferred.succeed(finish, undefined)
      expect(Exit.isFailure(yield* Fiber.join(client))).toBe(true)
      expect((yield* Fiber.join(unit))._tag).toBe("Written")
      expect(yield* notes).toEqual([{ text: "journal" }])
    }).pipe(Effect.provide(database())))
})
