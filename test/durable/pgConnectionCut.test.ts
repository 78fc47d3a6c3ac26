/**
 * PostgreSQL's writes when the connection breaks after a batch's `COMMIT` was sent: the server may
 * have committed it, so the batch fails as it is and is never written again (a second write would
 * store every step twice). The store reaches the server through a TCP proxy that, once armed,
 * passes on the batch, then the server's answer to its `BEGIN` only, and cuts the connection once
 * the server has committed.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Either, Layer } from "effect"
import { Database, type WriteUnit } from "../../src/durable/Database.js"
import * as PgConnection from "../../src/durable/pgConnection.js"
import * as PgDatabase from "../../src/durable/PgDatabase.js"
import { connect, freshSchema, skipPostgres } from "../support/postgres.js"
import { tcpProxy } from "../support/tcpProxy.js"

/** A proxy to the server of `url`; `cutAfterCommit` arms it once. */
const cuttingProxy = (url: string) =>
  Effect.gen(function*() {
    const state = { cutAfterCommit: false, cuts: 0 }
    const proxy = yield* tcpProxy(url, ({ client, upstream }) => {
      // Armed, the batch that writes `cut_rows` is passed on; of the server's messages after it,
      // those up to its first `ReadyForQuery` (the answer to the batch's `BEGIN`), the rest
      // dropped, and the connection cut once the server has said it committed.
      let cutting = false
      let passing = true
      let unread = Buffer.alloc(0)
      return {
        fromClient: (chunk) => {
          upstream.write(chunk)
          if (state.cutAfterCommit && chunk.includes(Buffer.from("cut_rows")) && chunk.includes(Buffer.from("COMMIT\0"))) {
            state.cutAfterCommit = false
            state.cuts++
            cutting = true
          }
        },
        fromServer: (chunk) => {
          if (!cutting) return void client.write(chunk)
          unread = Buffer.concat([unread, chunk])
          // A message: its type (a byte), then its length (its own four bytes included).
          while (unread.length >= 5 && unread.length >= 1 + unread.readInt32BE(1)) {
            const message = unread.subarray(0, 1 + unread.readInt32BE(1))
            unread = unread.subarray(message.length)
            if (passing) client.write(message)
            if (message[0] === "Z".charCodeAt(0)) passing = false
            // `CommandComplete` of the `COMMIT`: the batch is durable, and its answers lost.
            if (message[0] === "C".charCodeAt(0) && message.subarray(5).toString("latin1").startsWith("COMMIT")) {
              client.destroy()
              upstream.destroy()
            }
          }
        }
      }
    })
    return Object.assign(state, { url: proxy.url })
  })

describe.skipIf(skipPostgres)("PostgreSQL writes whose connection breaks", () => {
  it.scopedLive("a batch cut off after its COMMIT was sent fails and is not written again; the next write goes on a new connection", () =>
    Effect.gen(function*() {
      const url = yield* freshSchema
      const direct = yield* connect(url)
      yield* direct.unsafe("CREATE TABLE cut_rows (seq BIGSERIAL PRIMARY KEY, v TEXT NOT NULL)")
      const proxy = yield* cuttingProxy(url)
      const database = Context.get(
        yield* Layer.build(Layer.effect(Database, PgDatabase.make).pipe(Layer.provide(PgConnection.clientLayer(proxy.url)))),
        Database
      )
      // Two statements a unit: the connection's failure is met by a unit's statement, not only by `COMMIT`.
      const unit = (v: string): WriteUnit => ({
        guards: [{ sql: "SELECT 1 AS open", params: [] }],
        statements: [{ sql: "INSERT INTO cut_rows (v) VALUES (?)", params: [v] }, { sql: "SELECT COUNT(*) AS n FROM cut_rows", params: [] }]
      })
      // The writer busy for a moment, so that the three units after it go in one batch.
      proxy.cutAfterCommit = true
      const busy = yield* Effect.fork(database.write({ statements: [{ sql: "SELECT pg_sleep(0.3)", params: [] }] }))
      yield* Effect.sleep("50 millis")
      const written = yield* Effect.all(["a", "b", "c"].map((v) => Effect.either(database.write(unit(v)))), { concurrency: "unbounded" })
      yield* busy.await
      expect(proxy.cuts).toBe(1)
      expect(written.map((result) => Either.isLeft(result) ? result.left._tag : "written")).toEqual(["StoreError", "StoreError", "StoreError"])
      // The server committed the batch once; nothing wrote it again.
      const rows = yield* direct<{ readonly v: string; readonly n: number }>`SELECT v, COUNT(*)::int AS n FROM cut_rows GROUP BY v ORDER BY v`
      expect(rows.map((row) => [row.v, row.n])).toEqual([["a", 1], ["b", 1], ["c", 1]])
      // The writer's broken connection was dropped: the next batch goes on a new one.
      expect((yield* database.write(unit("d")))._tag).toBe("Written")
      expect(yield* direct<{ readonly v: string }>`SELECT v FROM cut_rows WHERE v = 'd'`).toHaveLength(1)
    }), 30_000)
})
