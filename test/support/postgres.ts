/**
 * PostgreSQL for tests (DESIGN section 11): the server at `FOUNDRY_TEST_PG_URL`, else the local
 * one at `postgres://postgres@127.0.0.1:5432/test`. Whether it answers is decided once, when this
 * module loads. When it does not, tests that need it are skipped with a printed reason, unless
 * `FOUNDRY_REQUIRE_PG=1` (as `.ci/run` sets): then they run and fail, saying why.
 */
import { randomBytes } from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import { Context, Data, Deferred, Effect, Either, Fiber, Layer, Redacted, type Scope } from "effect"
import { publicUrl } from "../../src/durable/publicUrl.js"

/** The server the tests use. */
export const postgresUrl: string = process.env["FOUNDRY_TEST_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"

/** Whether a missing server fails the tests instead of skipping them. */
export const postgresRequired: boolean = process.env["FOUNDRY_REQUIRE_PG"] === "1"

/** PostgreSQL was needed but does not answer. */
export class PostgresUnavailable extends Data.TaggedError("PostgresUnavailable")<{ readonly message: string }> {}

/** A client of the server at `url`, for as long as the scope lasts. */
export const connect = (url: string) =>
  Layer.build(PgClient.layer({ url: Redacted.make(url), connectTimeout: "3 seconds" })).pipe(
    Effect.map(Context.get(PgClient.PgClient))
  )

/**
 * Takes the locks `statement` takes, in a transaction of its own on `sql` that stays open, and
 * returns once they are taken: what waits for them waits until the returned effect lets them go
 * (and the transaction ends).
 */
export const holdLocks = <E>(sql: PgClient.PgClient, statement: Effect.Effect<unknown, E>) =>
  Effect.gen(function*() {
    const taken = yield* Deferred.make<void>()
    const release = yield* Deferred.make<void>()
    // Let go with the test's scope too: a test that fails before it lets go would otherwise leave the
    // transaction open while the scope closes its client, which waits for it.
    const holding = yield* Effect.forkScoped(sql.withTransaction(statement.pipe(Effect.zipRight(Deferred.succeed(taken, undefined)), Effect.zipRight(Deferred.await(release)))))
    // A statement that fails takes nothing: the failure is the test's.
    yield* Effect.raceFirst(Deferred.await(taken), Fiber.join(holding))
    return Effect.zipRight(Deferred.succeed(release, undefined), Fiber.join(holding))
  })

/**
 * Whether a session on `sql`'s database (`atLeast` sessions) waits for a lock (a statement that a
 * test holds back by holding one), in a statement whose text is like `statement` (SQL `LIKE`) when
 * given.
 */
export const someoneWaitsForALock = (sql: PgClient.PgClient, statement = "%", atLeast = 1) =>
  Effect.map(
    sql<{ readonly waiting: number }>`SELECT COUNT(*)::int AS waiting FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE ${statement}`,
    (rows) => (rows[0]?.waiting ?? 0) >= atLeast
  )

/** Why the server cannot be used, or `undefined` when it answers. */
const probe: Effect.Effect<string | undefined> = Effect.scoped(connect(postgresUrl)).pipe(
  Effect.either,
  Effect.map(Either.match({
    onLeft: (error) => {
      const cause = error.cause instanceof Error ? `: ${error.cause.message || error.cause.name}` : ""
      return `${error.message}${cause}`
    },
    onRight: () => undefined
  }))
)

/** Why PostgreSQL cannot be used, or `undefined` when it can. */
export const postgresUnavailable: string | undefined = await Effect.runPromise(probe)

/** Whether tests that need PostgreSQL are skipped (it does not answer and is not required). */
export const skipPostgres: boolean = postgresUnavailable !== undefined && !postgresRequired

const where = publicUrl(postgresUrl)
if (postgresUnavailable !== undefined) {
  if (postgresRequired) {
    console.error(`FOUNDRY_REQUIRE_PG=1 but PostgreSQL at ${where} is unavailable (${postgresUnavailable}); its tests will fail.`)
  } else {
    console.warn(
      `Skipping PostgreSQL tests: no server at ${where} (${postgresUnavailable}). ` +
        "Set FOUNDRY_TEST_PG_URL to use another; FOUNDRY_REQUIRE_PG=1 makes this a failure."
    )
  }
}

/** `url` with its sessions' `search_path` set to `schema` (libpq's `options` parameter). */
export const withSearchPath = (url: string, schema: string): string => {
  const parsed = new URL(url)
  parsed.searchParams.set("options", `-c search_path=${schema}`)
  return parsed.toString()
}

/** Fails, saying why, when the server does not answer (the tests that need it are not skipped: FOUNDRY_REQUIRE_PG=1). */
const requirePostgres = Effect.suspend(() =>
  postgresUnavailable === undefined
    ? Effect.void
    : Effect.fail(new PostgresUnavailable({
      message: `PostgreSQL is required (FOUNDRY_REQUIRE_PG=1) but unavailable at ${where}: ${postgresUnavailable}`
    })))

/**
 * A new, empty schema for one test, dropped with everything in it when the scope closes. Returns
 * a URL whose connections see only that schema. Fails with `PostgresUnavailable` when the server
 * does not answer.
 */
export const freshSchema: Effect.Effect<string, PostgresUnavailable, Scope.Scope> = Effect.gen(
  function*() {
    yield* requirePostgres
    const sql = yield* connect(postgresUrl)
    const schema = `foundry_test_${randomBytes(6).toString("hex")}`
    yield* Effect.acquireRelease(
      sql`CREATE SCHEMA ${sql(schema)}`,
      () => sql`DROP SCHEMA ${sql(schema)} CASCADE`.pipe(Effect.orDie)
    )
    return withSearchPath(postgresUrl, schema)
  }
).pipe(
  Effect.catchTag("SqlError", (error) =>
    Effect.fail(new PostgresUnavailable({ message: `could not create a test schema at ${where}: ${error.message}` })))
)

/**
 * A new, empty database for one test, dropped when the scope closes (connections still open are
 * cut). A cluster needs one of its own: `@effect/cluster`'s shard locks are advisory locks, which
 * are per database. Returns its URL.
 */
export const freshDatabase: Effect.Effect<string, PostgresUnavailable, Scope.Scope> = Effect.gen(
  function*() {
    yield* requirePostgres
    const sql = yield* connect(postgresUrl)
    const name = `foundry_test_${randomBytes(6).toString("hex")}`
    yield* Effect.acquireRelease(
      sql.unsafe(`CREATE DATABASE ${name}`),
      () => sql.unsafe(`DROP DATABASE ${name} WITH (FORCE)`).pipe(Effect.orDie)
    )
    const url = new URL(postgresUrl)
    url.pathname = `/${name}`
    return url.toString()
  }
).pipe(
  Effect.catchTag("SqlError", (error) =>
    Effect.fail(new PostgresUnavailable({ message: `could not create a test database at ${where}: ${error.message}` })))
)
