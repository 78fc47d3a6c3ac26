/**
 * PostgreSQL's connections that go silent without a word (a server's host gone, a failover, a
 * network cut): what was sent on them waited until TCP gave up, a quarter of an hour and more, and
 * on the writer's connection every write of the process behind it. A connection that answers
 * nothing for `connectTimeout` while the server is not at work on it is now closed, and what
 * waited on it fails; its server process, left in a transaction, is ended; a statement the server
 * is still at work on (waiting for a lock) is left to wait. The store reaches the server through a
 * TCP proxy that can drop every byte, each way.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, type Duration, Effect, Either, Fiber, Layer, Schedule } from "effect"
import { Database, type WriteUnit } from "../../src/durable/Database.js"
import * as PgConnection from "../../src/durable/pgConnection.js"
import * as PgDatabase from "../../src/durable/PgDatabase.js"
import { connect, freshSchema, skipPostgres } from "../support/postgres.js"
import { passing, tcpProxy } from "../support/tcpProxy.js"

/**
 * A proxy that passes everything until told: `silent`, the connections open until then pass
 * nothing more either way, their close included, for good; `unreachable`, no connection passes
 * anything, new ones included; `cutAt`, the next connection to send that text passes what it
 * sends before it, then nothing more.
 */
const silencingProxy = (url: string) =>
  Effect.gen(function*() {
    const state: { silent: boolean; unreachable: boolean; cutAt: string | undefined } = { silent: false, unreachable: false, cutAt: undefined }
    const proxy = yield* tcpProxy(url, (connection) => {
      const pass = passing(connection)
      const openedSilent = state.silent
      // Once cut, a connection stays cut: its ends never hear from each other again.
      let cut = false
      const passes = () => {
        if (state.unreachable || (state.silent && !openedSilent)) cut = true
        return !cut
      }
      return {
        fromClient: (chunk) => {
          const at = state.cutAt === undefined ? -1 : chunk.indexOf(state.cutAt)
          if (at >= 0) {
            state.cutAt = undefined
            if (passes()) pass.fromClient(chunk.subarray(0, at))
            cut = true
          }
          if (passes()) pass.fromClient(chunk)
        },
        fromServer: (chunk) => passes() && pass.fromServer(chunk),
        // The server does not hear of a client's end that it cannot hear from.
        closes: passes
      }
    })
    return Object.assign(state, { url: proxy.url })
  })

/** The store over `url`, for the test's scope, waiting `connectTimeout` for answers. */
const storeAt = (url: string, connectTimeout: Duration.DurationInput) =>
  Layer.build(Layer.effect(Database, PgDatabase.make).pipe(Layer.provide(PgConnection.clientLayer(url, connectTimeout)))).pipe(
    Effect.map(Context.get(Database))
  )

const insert = (v: string): WriteUnit => ({ statements: [{ sql: "INSERT INTO silent_rows (v) VALUES (?)", params: [v] }] })

/** The writer's server process. */
const writerPid = (database: Context.Tag.Service<Database>) =>
  Effect.flatMap(database.write({ statements: [{ sql: "SELECT pg_backend_pid() AS pid", params: [] }] }), (outcome) =>
    outcome._tag === "Written" ? Effect.succeed(Number(outcome.rows[0]?.[0]?.["pid"])) : Effect.dieMessage(`no pid: ${outcome._tag}`))

describe.skipIf(skipPostgres)("PostgreSQL connections that go silent", () => {
  it.scopedLive("a write whose connection goes silent in its transaction fails once the server is found not at work on it; its server process is ended; the next write goes on a new connection", () =>
    Effect.gen(function*() {
      const url = yield* freshSchema
      const direct = yield* connect(url)
      yield* direct.unsafe("CREATE TABLE silent_rows (seq BIGSERIAL PRIMARY KEY, v TEXT NOT NULL)")
      const proxy = yield* silencingProxy(url)
      const database = yield* storeAt(proxy.url, "1 second")
      expect((yield* database.write(insert("before")))._tag).toBe("Written")
      const pid = yield* writerPid(database)

      // The batch's `BEGIN` and its insert's text reach the server, its value only in part: the
      // server's process, at work on the insert, waits for the rest, which never comes.
      proxy.cutAt = "cut here"
      const started = Date.now()
      const written = yield* Effect.either(database.write({ statements: [{ sql: "INSERT INTO silent_rows (v) SELECT ?", params: ["unheard, cut here"] }] }))
      const waited = Date.now() - started

      expect(Either.isLeft(written) && written.left.message).toContain("answered nothing on a connection for 1 s")
      // Looked into after 1 s of silence (at a watch every half second), asked within 1 s.
      expect(waited).toBeGreaterThanOrEqual(1_000)
      expect(waited).toBeLessThan(4_000)
      // The server's end of the silent connection was ended (a signal, which the process takes at
      // once), not left in its transaction until the server's own TCP gives up on it.
      const listed = direct<{ readonly n: number }>`SELECT COUNT(*)::int AS n FROM pg_stat_activity WHERE pid = ${pid}`
      yield* listed.pipe(
        Effect.filterOrFail((rows) => rows[0]?.n === 0, (rows) => new Error(`still listed: ${JSON.stringify(rows)}`)),
        Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 40 })
      )
      expect((yield* database.write(insert("after")))._tag).toBe("Written")
      expect(yield* writerPid(database)).not.toBe(pid)
      const rows = yield* direct<{ readonly v: string }>`SELECT v FROM silent_rows ORDER BY seq`
      expect(rows.map((row) => row.v)).toEqual(["before", "after"])
    }), 30_000)

  it.scopedLive("a write that waits for a lock longer than that is left to wait, and is written", () =>
    Effect.gen(function*() {
      const url = yield* freshSchema
      const direct = yield* connect(url)
      const database = yield* storeAt(url, "1 second")
      // A lock of this test's schema alone: tests beside it wait for none of it.
      const lock = "SELECT pg_advisory_xact_lock(hashtext(current_schema()))"
      const held = yield* Deferred.make<void>()
      const holding = yield* Effect.fork(direct.withTransaction(
        direct.unsafe(lock).pipe(Effect.zipRight(Deferred.succeed(held, undefined)), Effect.zipRight(Effect.sleep("3 seconds")))
      ))
      yield* Deferred.await(held)
      const started = Date.now()
      const written = yield* database.write({ statements: [{ sql: lock, params: [] }] })
      expect(written._tag).toBe("Written")
      // Silent for about 3 s, looked into four or five times, each time found waiting for the lock.
      expect(Date.now() - started).toBeGreaterThanOrEqual(2_500)
      yield* Fiber.join(holding)
    }), 30_000)

  it.scopedLive("a read on a silent connection fails, and one on a server that cannot be reached; the next read answers", () =>
    Effect.gen(function*() {
      const url = yield* freshSchema
      const proxy = yield* silencingProxy(url)
      const database = yield* storeAt(proxy.url, "1 second")
      const one = { sql: "SELECT 1 AS one", params: [] }
      expect(yield* database.read(one)).toEqual([{ one: 1 }])

      proxy.silent = true
      const silent = yield* Effect.either(database.read(one))
      proxy.silent = false
      expect(Either.isLeft(silent) && silent.left.message).toContain("answered nothing")
      expect(yield* database.read(one)).toEqual([{ one: 1 }])

      // The server looked into cannot be reached either: the connection is closed all the same.
      proxy.unreachable = true
      const unreachable = yield* Effect.either(database.read(one))
      proxy.unreachable = false
      expect(Either.isLeft(unreachable) && unreachable.left.message).toContain("answered nothing")
      expect(yield* database.read(one)).toEqual([{ one: 1 }])
    }), 30_000)
})
