/**
 * PostgreSQL for the benchmarks that need it: the server at `FOUNDRY_BENCH_PG_URL` (default: the
 * local server's `test` database, whose user must be allowed to create databases).
 */
import { randomBytes } from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted } from "effect"

const serverUrl = process.env["FOUNDRY_BENCH_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"

/** A client of the server at `url` for the current scope. */
export const pgClient = (url: string) =>
  Layer.build(PgClient.layer({ url: Redacted.make(url) })).pipe(Effect.map(Context.get(PgClient.PgClient)))

/** A new database for the current scope, dropped when it closes (its connections cut); its URL. */
export const freshDatabase = Effect.gen(function*() {
  const admin = yield* pgClient(serverUrl)
  const name = `foundry_bench_${randomBytes(5).toString("hex")}`
  yield* Effect.acquireRelease(admin.unsafe(`CREATE DATABASE ${name}`), () => Effect.orDie(admin.unsafe(`DROP DATABASE ${name} WITH (FORCE)`)))
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return url.toString()
})
