/**
 * PostgreSQL's connections that go silent without a word (a server's host gone, a failover, a
 * network cut): what was sent on them waited until TCP gave up, a quarter of an hour and more, and
 * on the writer's connection every write of the process behind it. A connection that answers
 * nothing for `connectTimeout` while the server is not at work on it is now closed, and what
 * waited on it fails; its server process, left in a transaction or holding a session's advisory
 * locks, is ended; a statement the server is still at work on (waiting for a lock) is left to
 * wait. The store reaches the server through a TCP proxy that can drop every byte, each way.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, type Duration, Effect, Either, Fiber, Layer, Schedule } from "effect"
import { Database, type WriteUnit } from "../../src/durable/Database.js"
import * as PgConnection from "../../src/durable/pgConnection.js"
import * as PgDatabase from "../../src/durable/PgDatabase.js"
import { PgClient } from "@effect/sql-pg"
import { connect, freshSchema, skipPostgres } from "../support/postgres.js"
import { passing, tcpProxy } from "../support/tcpProxy.js"

/** A PostgreSQL server's `ErrorResponse` refusing a connection: too many connections (53300). */
const tooManyConnections = (() => {
  const fields = Buffer.from("SFATAL\0C53300\0Mtoo many connections for role \"foundry\"\0\0", "latin1")
  const head = Buffer.alloc(5)
  head.write("E", 0, "latin1")
  head.writeInt32BE(4 + fields.length, 1)
  return Buffer.concat([head, fields])
})()

/**
 * The server's messages of a connection's start with its process id (`BackendKeyData`) changed by
 * `told`; the rest passed as they come.
 */
const tellingProcessId = (write: (chunk: Buffer) => void, told: (pid: number) => number) => {
  let unread = Buffer.alloc(0)
  let started = false
  return (chunk: Buffer) => {
    if (started) return write(chunk)
    unread = Buffer.concat([unread, chunk])
    // A message: its type (a byte), then its length (its own four bytes included).
    while (!started && unread.length >= 5 && unread.length >= 1 + unread.readInt32BE(1)) {
      const message = Buffer.from(unread.subarray(0, 1 + unread.readInt32BE(1)))
      unread = unread.subarray(message.length)
      if (message[0] === "K".charCodeAt(0)) message.writeInt32BE(told(message.readInt32BE(5)), 5)
      if (message[0] === "Z".charCodeAt(0)) started = true
      write(message)
    }
    if (started && unread.length > 0) write(unread)
  }
}

/**
 * A proxy that passes everything until told: `silent`, the connections open until then pass
 * nothing more either way, their close included, for good; `unreachable`, no connection passes
 * anything, new ones included; `cutAt`, the next connection to send that text passes what it
 * sends before it, then nothing more; `refusing`, new connections are refused as by a server with
 * too many; `answersPerMs`, the server's bytes pass at that rate; `processIds`, connections opened
 * then are told the process id it makes of the server's (a pooler's clients are told ids of its own).
 */
const silencingProxy = (url: string) =>
  Effect.gen(function*() {
    const state: {
      silent: boolean
      unreachable: boolean
      cutAt: string | undefined
      refusing: boolean
      answersPerMs: number | undefined
      processIds: ((pid: number) => number) | undefined
    } = { silent: false, unreachable: false, cutAt: undefined, refusing: false, answersPerMs: undefined, processIds: undefined }
    const proxy = yield* tcpProxy(url, (connection) => {
      const { client, upstream } = connection
      const pass = passing(connection)
      const openedSilent = state.silent
      const refused = state.refusing
      const toClient = state.processIds === undefined ? pass.fromServer : tellingProcessId(pass.fromServer, state.processIds)
      // Once cut, a connection stays cut: its ends never hear from each other again.
      let cut = false
      const passes = () => {
        if (state.unreachable || (state.silent && !openedSilent)) cut = true
        return !cut
      }
      return {
        fromClient: (chunk) => {
          if (refused) return void client.end(tooManyConnections)
          const at = state.cutAt === undefined ? -1 : chunk.indexOf(state.cutAt)
          if (at >= 0) {
            state.cutAt = undefined
            if (passes()) pass.fromClient(chunk.subarray(0, at))
            cut = true
          }
          if (passes()) pass.fromClient(chunk)
        },
        fromServer: (chunk) => {
          if (!passes()) return
          toClient(chunk)
          if (state.answersPerMs === undefined) return
          upstream.pause()
          setTimeout(() => upstream.resume(), chunk.length / state.answersPerMs)
        },
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

const one = { sql: "SELECT 1 AS one", params: [] }

/** The store through a proxy that can silence it, waiting 1 s for answers, once a first read has answered. */
const silenceableStore = Effect.gen(function*() {
  const proxy = yield* silencingProxy(yield* freshSchema)
  const database = yield* storeAt(proxy.url, "1 second")
  expect(yield* database.read(one)).toEqual([{ one: 1 }])
  return { proxy, database }
})

const insert = (v: string): WriteUnit => ({ statements: [{ sql: "INSERT INTO silent_rows (v) VALUES (?)", params: [v] }] })

/** The writer's server process. */
const writerPid = (database: Context.Tag.Service<Database>) =>
  Effect.flatMap(database.write({ statements: [{ sql: "SELECT pg_backend_pid() AS pid", params: [] }] }), (outcome) =>
    outcome._tag === "Written" ? Effect.succeed(Number(outcome.rows[0]?.[0]?.["pid"])) : Effect.dieMessage(`no pid: ${outcome._tag}`))

/** A lock of the test's schema alone (tests beside it wait for none of it). */
const lock = "SELECT pg_advisory_xact_lock(hashtext(current_schema()))"

/** `lock` taken on `sql` and held for `seconds` by a fiber of its own, once it is held. */
const holdLock = (sql: PgClient.PgClient, seconds: number) =>
  Effect.gen(function*() {
    const held = yield* Deferred.make<void>()
    const holding = yield* Effect.fork(sql.withTransaction(
      sql.unsafe(lock).pipe(Effect.zipRight(Deferred.succeed(held, undefined)), Effect.zipRight(Effect.sleep(`${seconds} seconds`)))
    ))
    yield* Deferred.await(held)
    return holding
  })

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

  it.scopedLive("a session's connection gone silent while idle, holding advisory locks (the cluster's shards), has its server process ended: another session takes the locks at once", () =>
    Effect.gen(function*() {
      const url = yield* freshSchema
      const direct = yield* connect(url)
      // Known by when its process started, whatever the sessions' settings: in these a timestamp's
      // text names its zone IST, which the server reads back as Israel's.
      const settings = new URL(url)
      settings.searchParams.set("options", `${settings.searchParams.get("options")} -c datestyle=SQL,DMY -c timezone=Asia/Kolkata`)
      const proxy = yield* silencingProxy(settings.toString())
      const sql = Context.get(yield* Layer.build(PgConnection.clientLayer(proxy.url, "1 second")), PgClient.PgClient)
      const shard = "hashtext(current_schema() || ' shard')"
      const pid = yield* Effect.scoped(Effect.gen(function*() {
        // As the cluster's runner storage holds its shards: on a connection of its own, outside any transaction.
        const session = yield* sql.reserve
        const [[pid]] = yield* session.executeValues("SELECT pg_backend_pid()", [])
        yield* session.executeRaw(`SELECT pg_advisory_lock(${shard})`, [])
        proxy.silent = true
        const silent = yield* Effect.either(session.executeRaw("SELECT 1", []))
        expect(Either.isLeft(silent) && `${silent.left.message}: ${String(silent.left.cause)}`).toContain("answered nothing")
        return Number(pid)
      }))
      proxy.silent = false
      // Ended as the connection was closed: not left idle with its locks until the server's own
      // TCP gives up on it (two hours by default).
      const taken = direct<{ readonly taken: boolean }>`SELECT pg_try_advisory_lock(${direct.literal(shard)}) AS taken`
      yield* taken.pipe(
        Effect.filterOrFail((rows) => rows[0]?.taken === true, () => new Error("the shard's lock is still held")),
        Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 40 })
      )
      // A process ended lets its locks go a moment before it leaves the list.
      const listed = direct<{ readonly n: number }>`SELECT COUNT(*)::int AS n FROM pg_stat_activity WHERE pid = ${pid}`
      yield* listed.pipe(
        Effect.filterOrFail((rows) => rows[0]?.n === 0, () => new Error(`process ${pid} is still listed`)),
        Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 40 })
      )
    }), 30_000)

  it.scopedLive("a new connection whose server tells nothing once it has opened is ended, and fails its first caller alone; the next read answers", () =>
    Effect.gen(function*() {
      const { database, proxy } = yield* silenceableStore
      // The pool's one connection busy, a read opens another, cut as it asks when its server
      // process started: no caller waits for a connection of the pool then, only for that one.
      proxy.cutAt = "backend_start"
      const busy = yield* Effect.fork(database.read({ sql: "SELECT 1 AS one FROM pg_sleep(2)", params: [] }))
      yield* Effect.sleep("100 millis")
      const opened = yield* Effect.either(database.read(one))
      expect(Either.isLeft(opened) && opened.left.message).toContain("told nothing for 1 s on a connection it had just opened")
      expect(yield* Fiber.join(busy)).toEqual([{ one: 1 }])
      expect(yield* database.read(one)).toEqual([{ one: 1 }])
    }), 30_000)

  it.scopedLive("a write that waits for a lock longer than that is left to wait, and is written", () =>
    Effect.gen(function*() {
      const url = yield* freshSchema
      const direct = yield* connect(url)
      const database = yield* storeAt(url, "1 second")
      const holding = yield* holdLock(direct, 3)
      const started = Date.now()
      const written = yield* database.write({ statements: [{ sql: lock, params: [] }] })
      expect(written._tag).toBe("Written")
      // Silent for about 3 s, looked into four or five times, each time found waiting for the lock.
      expect(Date.now() - started).toBeGreaterThanOrEqual(2_500)
      yield* Fiber.join(holding)
    }), 30_000)

  it.scopedLive("a read on a silent connection fails, and one on a server that cannot be reached; the next read answers", () =>
    Effect.gen(function*() {
      const { database, proxy } = yield* silenceableStore
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

  it.scopedLive("a statement of the store's `PgClient` (the storages written with @effect/sql) on a silent connection fails as the store's own do; the next answers", () =>
    Effect.gen(function*() {
      const url = yield* freshSchema
      const proxy = yield* silencingProxy(url)
      const sql = Context.get(yield* Layer.build(PgConnection.clientLayer(proxy.url, "1 second")), PgClient.PgClient)
      expect(yield* sql.unsafe("SELECT 1 AS one")).toEqual([{ one: 1 }])

      proxy.silent = true
      const started = Date.now()
      const silent = yield* Effect.either(sql.unsafe("SELECT 2 AS two"))
      proxy.silent = false
      expect(Either.isLeft(silent) && `${silent.left.message}: ${String(silent.left.cause)}`).toContain("answered nothing")
      // Found by the watch within half a second of 1 s of silence, asked within 1 s.
      expect(Date.now() - started).toBeLessThan(4_000)
      expect(yield* sql.unsafe("SELECT 3 AS three")).toEqual([{ three: 3 }])
    }), 30_000)

  it.scopedLive("a statement of the store's queued behind another the server still runs on the connection is left to wait, and answers", () =>
    Effect.gen(function*() {
      const { pool } = Context.get(yield* Layer.build(PgConnection.clientLayer(yield* freshSchema, "1 second")), PgConnection.PgPools)
      const started = Date.now()
      const rows = yield* PgConnection.withConnection(pool, (connection) => {
        // As a `PgClient` statement interrupted, its connection given back before its cancel took.
        connection.query("SELECT pg_sleep(3)").catch(() => {})
        return PgConnection.query(connection, PgConnection.plain("SELECT 1 AS one"))
      })
      expect(rows).toEqual([{ one: 1 }])
      expect(Date.now() - started).toBeGreaterThanOrEqual(2_500)
    }), 30_000)

  it.scopedLive("a large answer coming slowly is left to come, its bytes moving", () =>
    Effect.gen(function*() {
      const url = yield* freshSchema
      const proxy = yield* silencingProxy(url)
      const database = yield* storeAt(proxy.url, "1 second")
      proxy.answersPerMs = 400
      const started = Date.now()
      // About a megabyte at 400 bytes a millisecond: about 2.5 s, with no answer whole before.
      const rows = yield* database.read({ sql: "SELECT repeat('x', 1000000) AS big", params: [] })
      expect(String(rows[0]?.["big"]).length).toBe(1_000_000)
      expect(Date.now() - started).toBeGreaterThanOrEqual(2_000)
    }), 30_000)

  it.scopedLive("a connection whose process ids are not the server's (a pooler's) is left to wait, as is one whose server refuses to be asked", () =>
    Effect.gen(function*() {
      const url = yield* freshSchema
      const direct = yield* connect(url)
      const proxy = yield* silencingProxy(url)
      proxy.processIds = (pid) => pid + 1_000_000
      const database = yield* storeAt(proxy.url, "1 second")
      // Behind something that makes process ids up, the server cannot tell which is the
      // connection's: a lock waited on for 3 s is waited for.
      const first = yield* holdLock(direct, 3)
      let started = Date.now()
      expect((yield* database.write({ statements: [{ sql: lock, params: [] }] }))._tag).toBe("Written")
      expect(Date.now() - started).toBeGreaterThanOrEqual(2_500)
      yield* Fiber.join(first)

      // A server that refuses the look's connection (too many) cannot tell either: the read on a
      // silent connection waits while it does, and fails once it is asked.
      proxy.processIds = undefined
      yield* database.read(one)
      proxy.refusing = true
      proxy.silent = true
      started = Date.now()
      const reading = yield* Effect.fork(Effect.either(database.read({ sql: "SELECT 2 AS two", params: [] })))
      yield* Effect.sleep("2500 millis")
      expect(reading.unsafePoll()).toBeNull()
      proxy.refusing = false
      const read = yield* Fiber.join(reading)
      expect(Either.isLeft(read) && read.left.message).toContain("answered nothing")
      // Looked into again a second or so after each refusal: asked at the latest about 2 s after it was lifted.
      expect(Date.now() - started).toBeLessThan(10_000)
    }), 30_000)

  it.scopedLive("another process of the connection's id (after a failover) is not taken for its: not ended, and the silent connection closed", () =>
    Effect.gen(function*() {
      const url = yield* freshSchema
      const direct = yield* connect(url)
      const proxy = yield* silencingProxy(url)
      // Another session, in a transaction it holds open, its last statement the one the store's
      // connection will wait on (every Foundry process runs the same statements).
      const other = yield* Deferred.make<number>()
      const holding = yield* Effect.fork(direct.withTransaction(
        Effect.flatMap(direct<{ readonly pid: number }>`SELECT pg_backend_pid() AS pid`, (rows) =>
          direct.unsafe("SELECT 1 AS one").pipe(
            Effect.zipRight(Deferred.succeed(other, rows[0]?.pid ?? 0)),
            Effect.zipRight(Effect.sleep("4 seconds"))
          ))
      ))
      const pid = yield* Deferred.await(other)
      // The store's connections are told that session's process id as theirs.
      proxy.processIds = () => pid
      const database = yield* storeAt(proxy.url, "1 second")
      expect(yield* database.read(one)).toEqual([{ one: 1 }])
      // The look's own connection is told its own.
      proxy.processIds = undefined
      proxy.silent = true
      const read = yield* Effect.either(database.read(one))
      expect(Either.isLeft(read) && read.left.message).toContain("answered nothing")
      // The other session's transaction was left alone: it commits.
      yield* Fiber.join(holding)
    }), 30_000)
})
