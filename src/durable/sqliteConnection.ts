/**
 * The one SQLite connection of a `SqliteDatabase`, through better-sqlite3: open for the current
 * scope in WAL mode with every commit synced, its prepared statements cached by their text, each
 * statement counted and timed for the benchmarks, and another process's lock met without holding
 * the thread.
 */
import Sqlite from "better-sqlite3"
import { Duration, Effect, Either, Schedule } from "effect"
import { startupContention } from "./Database.js"
import { messageOf, StoreError } from "./StoreError.js"

/** What the connection has done, for `Database.stats`. */
export interface ConnectionCounts {
  statements: number
  /** Transactions that wrote: a batch, a client's transaction, or a write outside any (its own). */
  writeTransactions: number
  /** Milliseconds the batches' `COMMIT`s took: on this connection, the sync that makes them durable. */
  commitMillis: number
  /** Milliseconds inside SQLite for every other statement. */
  statementMillis: number
}

/** The connection, open. */
export interface SqliteConnection {
  readonly db: Sqlite.Database
  /** The statement of `sql`, prepared the first time it is asked for. */
  readonly prepare: (sql: string) => Sqlite.Statement
  readonly counts: ConnectionCounts
  /** Runs `statement` with `run`: counted, and its time in SQLite added to `statementMillis`. */
  readonly measured: <A>(statement: Sqlite.Statement, run: () => A) => A
  /** Runs one statement, its rows by column name. */
  readonly execute: (statement: Sqlite.Statement, params: ReadonlyArray<unknown>) => ReadonlyArray<Record<string, unknown>>
}

/**
 * How long a write waits for another process's write lock before it fails. Waited without
 * blocking the thread: the connection's own busy timeout is 0, so SQLite says at once that the
 * database is busy, and the write is tried again a few milliseconds later (better-sqlite3's default
 * busy timeout of 5 s would hold the whole process, its HTTP server, timers and other runs, that long).
 */
export const lockWait = 5000

/** SQLite refused a statement because another process holds a lock it needs. */
export const isBusy = (cause: unknown): boolean =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string" && cause.code.startsWith("SQLITE_BUSY")

/** Opens `filename` for the current scope. */
export const openConnection = (filename: string) =>
  Effect.gen(function*() {
    const db = yield* Effect.acquireRelease(
      Effect.try({
        try: () => new Sqlite(filename, { timeout: 0 }),
        catch: (cause) => new StoreError({ operation: "open", message: `cannot open ${filename}: ${messageOf(cause)}` })
      }),
      (db) => Effect.sync(() => db.close())
    )
    // Processes opening one new database at once race to switch it to WAL, which needs the file to
    // itself for a moment: the loser is told the database is locked, and tries again.
    yield* Effect.try({
      try: () => db.pragma("journal_mode = WAL"),
      catch: (cause) => new StoreError({ operation: "open", message: `cannot open ${filename}: ${messageOf(cause)}` })
    }).pipe(Effect.retry(startupContention))
    // Every commit synced before it is acknowledged, so that a step survives a power cut as well as a
    // killed process. Said explicitly: better-sqlite3 builds SQLite with NORMAL as the default in WAL
    // mode, which syncs only at checkpoints, and applies it when the connection next reads the file
    // (so `PRAGMA synchronous` reads FULL just after switching to WAL, NORMAL after the first write).
    db.pragma("synchronous = FULL")
    // A batch sits in a savepoint (its units each in one of their own once one failed), and SQLite
    // keeps the pages a savepoint may roll back in a sub-journal: in a temporary file by default,
    // written on every page a batch first touches. In
    // memory, a run's SQLite time falls by about a quarter (docs/performance.md); the database file
    // and its durability are untouched (this is the temporary store of one connection).
    db.pragma("temp_store = MEMORY")

    // The same few dozen statements run again and again.
    const cache = new Map<string, Sqlite.Statement>()
    const prepare = (sql: string): Sqlite.Statement => {
      const cached = cache.get(sql)
      if (cached !== undefined) return cached
      const prepared = db.prepare(sql)
      cache.set(sql, prepared)
      return prepared
    }
    const counts: ConnectionCounts = { statements: 0, writeTransactions: 0, commitMillis: 0, statementMillis: 0 }
    const measured = <A>(statement: Sqlite.Statement, run: () => A): A => {
      counts.statements++
      if (!statement.readonly && !db.inTransaction) counts.writeTransactions++
      const started = performance.now()
      try {
        return run()
      } finally {
        counts.statementMillis += performance.now() - started
      }
    }
    const execute = (statement: Sqlite.Statement, params: ReadonlyArray<unknown>): ReadonlyArray<Record<string, unknown>> =>
      measured(statement, () => {
        if (statement.reader) return statement.all(...params).filter(isRow)
        statement.run(...params)
        return []
      })
    const connection: SqliteConnection = { db, prepare, counts, measured, execute }
    return connection
  })

/** Tried again shortly while another process holds the lock, for up to `lockWait` in all. */
const whileLocked = Schedule.exponential("1 millis").pipe(Schedule.union(Schedule.spaced("50 millis")), Schedule.upTo(Duration.millis(lockWait)))

/**
 * `run` on `db` now; outside a transaction (a `BEGIN IMMEDIATE` among them), again shortly while
 * another process's lock refuses it, without a wait on the thread (nothing is added when it
 * succeeds). Each later try goes through `connected`, which keeps it out of a client's transaction
 * begun meanwhile on the one connection; inside a transaction nothing is tried again.
 */
export const retryingWhileLocked = <A, E>(
  db: Sqlite.Database,
  run: () => A,
  failure: (cause: unknown) => E,
  connected: <B, F>(attempt: Effect.Effect<B, F>) => Effect.Effect<B, F>
): Effect.Effect<A, E> => {
  const retriable = (cause: unknown) => isBusy(cause) && !db.inTransaction
  // Made only once the lock is met: building the retry's schedule costs more than most statements.
  const again = () => {
    const once = connected(Effect.suspend(() => {
      try {
        return Either.right(run())
      } catch (cause) {
        return Either.left(cause)
      }
    }))
    return Effect.zipRight(
      Effect.sleep(Duration.millis(1)),
      once.pipe(Effect.retry({ schedule: whileLocked, while: retriable }), Effect.mapError(failure))
    )
  }
  return Effect.suspend(() => {
    try {
      return Effect.succeed(run())
    } catch (cause) {
      return retriable(cause) ? again() : Effect.fail(failure(cause))
    }
  })
}

const isRow = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null
