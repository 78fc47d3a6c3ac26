/**
 * The `Database` on one SQLite file through better-sqlite3: a `SqlClient` for reads and the
 * occasional write, and a group-commit writer that executes a whole batch synchronously with
 * prepared statements, between one prepared `BEGIN` and `COMMIT`. Both share the one connection
 * and the one permit that serializes it, so a batch never interleaves with a client transaction.
 * `@effect/sql-sqlite-node` makes the same client but keeps its connection private; the writer
 * needs the connection itself to write a batch in one synchronous call. The store's own reads of
 * one turn of the event loop share a read transaction (`readSnapshot.ts`).
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { FileSystem, Path } from "@effect/platform"
import { SqlClient, SqlConnection, Statement as SqlStatement } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import Sqlite from "better-sqlite3"
import { Context, Duration, Effect, Either, Layer, Schedule, Scope, String as Str } from "effect"
import { type BatchOutcome, Database, groupCommitSync, type Statement, startupContention, type SyncBatch, type WriteUnit } from "./Database.js"
import { migrate } from "./migrations.js"
import { makeReadSnapshot } from "./readSnapshot.js"
import { messageOf, StoreError } from "./StoreError.js"

/**
 * How long a write waits for another process's write lock before it fails. Waited without
 * blocking the thread: the connection's own busy timeout is 0, so SQLite says at once that the
 * database is busy, and the write is tried again a few milliseconds later (better-sqlite3's default
 * busy timeout of 5 s would hold the whole process, its HTTP server, timers and other runs, that long).
 */
const lockWait = 5000

/** Tried again shortly while another process holds the lock, for up to `lockWait` in all. */
const whileLocked = Schedule.exponential("1 millis").pipe(Schedule.union(Schedule.spaced("50 millis")), Schedule.upTo(Duration.millis(lockWait)))

/** SQLite refused a statement because another process holds a lock it needs. */
const isBusy = (cause: unknown): boolean =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string" && cause.code.startsWith("SQLITE_BUSY")

/** Prepared statements by their text: the same few dozen statements run again and again. */
const preparedCache = (db: Sqlite.Database) => {
  const cache = new Map<string, Sqlite.Statement>()
  return (sql: string): Sqlite.Statement => {
    const cached = cache.get(sql)
    if (cached !== undefined) return cached
    const prepared = db.prepare(sql)
    cache.set(sql, prepared)
    return prepared
  }
}

/** The database on `filename`, open for the current scope. */
export const make = (filename: string) =>
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
    // A batch's units each sit in a savepoint, and SQLite keeps the pages a savepoint may roll back in
    // a sub-journal: in a temporary file by default, written on every page a unit first touches. In
    // memory, a run's SQLite time falls by about a quarter (docs/performance.md); the database file
    // and its durability are untouched (this is the temporary store of one connection).
    db.pragma("temp_store = MEMORY")
    const prepare = preparedCache(db)
    let statements = 0
    let writeTransactions = 0
    let commitMillis = 0
    let statementMillis = 0
    const snapshot = makeReadSnapshot(db, (millis) => statementMillis += millis)
    // Ended before the connection closes (finalizers run last added, first).
    yield* Effect.addFinalizer(() => Effect.sync(snapshot.end))

    /**
     * `run` now; outside a transaction (a `BEGIN IMMEDIATE` among them), again shortly while another
     * process's lock refuses it, without a wait on the thread (nothing is added when it succeeds).
     * Each later try goes through `connected`, which keeps it out of a client's transaction begun
     * meanwhile on the one connection; inside a transaction nothing is tried again.
     */
    const retryingWhileLocked = <A, E>(
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

    /**
     * Runs `statement` with `run`: counted (a write outside a transaction is a transaction of its
     * own), and its time in SQLite added to the total the benchmarks report.
     */
    const measured = <A>(statement: Sqlite.Statement, run: () => A): A => {
      statements++
      if (!statement.readonly && !db.inTransaction) writeTransactions++
      const started = performance.now()
      try {
        return run()
      } finally {
        statementMillis += performance.now() - started
      }
    }

    /** Runs one statement, its rows by column name. */
    const execute = (statement: Sqlite.Statement, params: ReadonlyArray<unknown>): ReadonlyArray<Record<string, unknown>> =>
      measured(statement, () => {
        if (statement.reader) return statement.all(...params).filter(isRow)
        statement.run(...params)
        return []
      })

    /**
     * A statement as the `SqlClient` runs it: a failure is the `SqlError` it expects. Outside a
     * transaction (a `BEGIN IMMEDIATE` among them), one that met another process's lock is tried
     * again; the connection is its own meanwhile, as the `SqlClient` holds the permit for the
     * statement (see `acquirer`) or its transaction holds it.
     */
    const attempt = <A>(run: () => A) =>
      retryingWhileLocked(run, (cause) => new SqlError({ cause, message: "Failed to execute statement" }), (effect) => effect)
    const transformed = (
      rows: ReadonlyArray<Record<string, unknown>>,
      transformRows: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
    ) => transformRows === undefined ? rows : transformRows(rows)

    const connection: SqlConnection.Connection = {
      execute: (sql, params, transformRows) => attempt(() => transformed(execute(prepare(sql), params), transformRows)),
      executeRaw: (sql, params) => attempt(() => execute(prepare(sql), params)),
      executeValues: (sql, params) =>
        attempt(() => {
          const statement = prepare(sql)
          if (!statement.reader) {
            execute(statement, params)
            return []
          }
          return measured(statement, () => {
            try {
              return statement.raw(true).all(...params).filter(isValues)
            } finally {
              statement.raw(false)
            }
          })
        }),
      executeUnprepared: (sql, params, transformRows) => attempt(() => transformed(execute(db.prepare(sql), params ?? []), transformRows)),
      executeStream: () => Effect.dieMessage("executeStream is not supported on the SQLite store")
    }

    const permit = yield* Effect.makeSemaphore(1)
    // The connection taken for a client's statement or transaction: out of the reads' transaction first.
    const taken = Effect.tap(permit.take(1), snapshot.end)
    const client = yield* SqlClient.make({
      // Held until the statement is over, its tries while another process holds the lock included.
      acquirer: Effect.as(Effect.acquireRelease(taken, () => permit.release(1)), connection),
      transactionAcquirer: Effect.uninterruptibleMask((restore) =>
        Effect.as(
          Effect.zipRight(restore(taken), Effect.tap(Effect.scope, (scope) => Scope.addFinalizer(scope, permit.release(1)))),
          connection
        )
      ),
      compiler: SqlStatement.makeCompilerSqlite(Str.camelToSnake),
      // Transactions take the write lock when they begin (see `begin` below).
      beginTransaction: "BEGIN IMMEDIATE",
      transformRows: SqlStatement.defaultTransforms(Str.snakeToCamel).array,
      spanAttributes: [["db.system.name", "sqlite"]]
    })

    // IMMEDIATE: the write lock is taken (or, held by another process, refused at once and tried
    // again later) before the first statement. A deferred transaction that reads first (a unit's
    // guard) and then writes after another process has committed is refused at once with
    // SQLITE_BUSY, without waiting: its snapshot is stale.
    const begin = db.prepare("BEGIN IMMEDIATE")
    const commit = db.prepare("COMMIT")
    const rollback = db.prepare("ROLLBACK")
    const savepoint = db.prepare("SAVEPOINT unit")
    const releaseSavepoint = db.prepare("RELEASE unit")
    const rollbackToSavepoint = db.prepare("ROLLBACK TO unit")

    /**
     * A unit's statement. An insert that asks for its rows' `seq`s is told them without `RETURNING`
     * (which costs about a sixth of an event insert): the rows of one statement take consecutive
     * rowids, the last of which the insert reports.
     */
    const executeInUnit = (s: Statement): ReadonlyArray<Record<string, unknown>> => {
      const rows = s.sequencedRows
      if (rows === undefined) return execute(prepare(s.sql), s.params)
      const statement = prepare(s.sql)
      const last = Number(measured(statement, () => statement.run(...s.params)).lastInsertRowid)
      return Array.from({ length: rows }, (_, index) => ({ seq: last - rows + 1 + index }))
    }

    const writeUnit = (unit: WriteUnit): BatchOutcome => {
      if (unit.guard !== undefined && execute(prepare(unit.guard.sql), unit.guard.params).length === 0) return { _tag: "Refused" }
      return { _tag: "Written", rows: unit.statements.map(executeInUnit) }
    }

    /**
     * One transaction for the whole batch. With more than one unit, each unit sits in a savepoint,
     * so a unit whose statement fails (a unique key, say) is rolled back alone.
     */
    const writeBatch = (units: ReadonlyArray<WriteUnit>): ReadonlyArray<BatchOutcome> => {
      try {
        const outcomes = units.length === 1
          ? [writeUnit(units[0] ?? { statements: [] })]
          : units.map((unit): BatchOutcome => {
            savepoint.run()
            try {
              const outcome = writeUnit(unit)
              releaseSavepoint.run()
              return outcome
            } catch (cause) {
              rollbackToSavepoint.run()
              releaseSavepoint.run()
              return { _tag: "Failed", message: messageOf(cause) }
            }
          })
        const committing = performance.now()
        commit.run()
        commitMillis += performance.now() - committing
        writeTransactions++
        return outcomes
      } catch (cause) {
        if (db.inTransaction) rollback.run()
        if (units.length === 1) return [{ _tag: "Failed", message: messageOf(cause) }]
        throw cause
      }
    }

    // A client transaction holds the permit, and the connection, across fibers; outside one, a
    // batch or a read runs synchronously and nothing can come between its statements.
    const write = groupCommitSync(
      (units): SyncBatch => {
        snapshot.end()
        if (db.inTransaction) return inTransaction
        const failed = (cause: unknown) => new StoreError({ operation: "write", message: messageOf(cause) })
        try {
          begin.run()
        } catch (cause) {
          return isBusy(cause) ? locked : { _tag: "Done", written: Either.left(failed(cause)) }
        }
        return { _tag: "Done", written: Either.try({ try: () => writeBatch(units), catch: failed }) }
      },
      (flush) =>
        Effect.runFork(permit.withPermits(1)(Effect.suspend(() => {
          snapshot.end()
          if (!db.inTransaction) return Effect.sync(flush)
          // Under the permit no client transaction is running: this one was left open (a COMMIT
          // that failed). Rolled back, or every batch after it would wait for it forever.
          return Effect.zipRight(
            Effect.logWarning("rolled back a transaction left open on the SQLite connection"),
            Effect.sync(() => {
              try {
                rollback.run()
              } finally {
                flush()
              }
            })
          )
        }))),
      lockWait
    )
    /** `effect` now, or, while a client's transaction holds the connection, once it is over. */
    const outsideClientTransaction = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
      Effect.suspend(() => db.inTransaction && !snapshot.isOpen() ? permit.withPermits(1)(effect) : effect)
    // A read in WAL mode meets a lock only while another process recovers or checkpoints the log.
    const read = (statement: Statement) =>
      outsideClientTransaction(retryingWhileLocked(
        () => snapshot.within(() => execute(prepare(statement.sql), statement.params)),
        (cause) => new StoreError({ operation: "read", message: messageOf(cause) }),
        outsideClientTransaction
      ))

    return Database.of({
      dialect: "sqlite",
      sql: client,
      read,
      write,
      stats: Effect.sync(() => ({ statements, writeTransactions, commitMillis, statementMillis }))
    })
  })

const inTransaction: SyncBatch = { _tag: "InTransaction" }
const locked: SyncBatch = { _tag: "Locked" }

const isRow = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null
const isValues = (value: unknown): value is ReadonlyArray<unknown> => Array.isArray(value)

/** The database on a SQLite file (its folder created if missing), migrated, with its `SqlClient`. */
export const layer = (filename: string) =>
  Layer.scopedContext(
    Effect.gen(function*() {
      if (filename !== ":memory:") {
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        yield* fs.makeDirectory(path.dirname(filename), { recursive: true }).pipe(
          Effect.mapError((error) => new StoreError({ operation: "open", message: error.message }))
        )
      }
      const database = yield* make(filename)
      yield* Effect.provideService(migrate, SqlClient.SqlClient, database.sql)
      return Context.make(Database, database).pipe(Context.add(SqlClient.SqlClient, database.sql))
    })
  ).pipe(Layer.provide(Reactivity.layer))
