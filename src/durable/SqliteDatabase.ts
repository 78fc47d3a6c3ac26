/**
 * The `Database` on one SQLite file through better-sqlite3: a `SqlClient` for reads and the
 * occasional write, and a group-commit writer that executes a whole batch synchronously with
 * prepared statements, between one prepared `BEGIN` and `COMMIT` (`sqliteBatch.ts`). Both share
 * the one connection (`sqliteConnection.ts`) and the one permit that serializes it, so a batch
 * never interleaves with a client transaction. `@effect/sql-sqlite-node` makes the same client but
 * keeps its connection private; the writer needs the connection itself to write a batch in one
 * synchronous call. The store's own reads of one turn of the event loop share a read transaction
 * (`readSnapshot.ts`).
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { FileSystem, Path } from "@effect/platform"
import { SqlClient, type SqlConnection, Statement as SqlStatement } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { Context, Effect, Either, Layer, Scope, String as Str } from "effect"
import { Database, groupCommitSync, type Statement, type SyncBatch } from "./Database.js"
import { migrate } from "./migrations.js"
import { makeReadSnapshot, type ReadSnapshot } from "./readSnapshot.js"
import { makeSqliteBatch } from "./sqliteBatch.js"
import { openChannel } from "./sqliteChannel.js"
import { isBusy, lockWait, openConnection, retryingWhileLocked, type SqliteConnection } from "./sqliteConnection.js"
import { messageOf, StoreError } from "./StoreError.js"

/** The database on `filename`, open for the current scope. */
export const make = (filename: string) =>
  Effect.gen(function*() {
    const connection = yield* openConnection(filename)
    const { counts, db, execute, prepare } = connection
    const snapshot = makeReadSnapshot(db, (millis) => counts.statementMillis += millis)
    // Ended before the connection closes (finalizers run last added, first).
    yield* Effect.addFinalizer(() => Effect.sync(snapshot.end))
    const permit = yield* Effect.makeSemaphore(1)
    const client = yield* sqlClient(connection, snapshot, permit)
    const batch = makeSqliteBatch(connection)

    // A client transaction holds the permit, and the connection, across fibers; outside one, a
    // batch or a read runs synchronously and nothing can come between its statements.
    const write = groupCommitSync(
      (units): SyncBatch => {
        snapshot.end()
        if (db.inTransaction) return inTransaction
        const failed = (cause: unknown) => new StoreError({ operation: "write", message: messageOf(cause) })
        try {
          batch.begin()
        } catch (cause) {
          return isBusy(cause) ? locked : { _tag: "Done", written: Either.left(failed(cause)) }
        }
        return { _tag: "Done", written: Either.try({ try: () => batch.write(units), catch: failed }) }
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
                batch.rollback()
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
        db,
        () => snapshot.within(() => execute(prepare(statement.sql), statement.params)),
        (cause) => new StoreError({ operation: "read", message: messageOf(cause) }),
        outsideClientTransaction
      ))

    return Database.of({
      dialect: "sqlite",
      sql: client,
      read,
      write,
      stats: Effect.sync(() => ({ ...counts })),
      // A store in memory is one process's alone.
      channel: filename === ":memory:" ? undefined : yield* openChannel(filename)
    })
  })

/**
 * The `SqlClient` on the connection. A statement or transaction takes the connection with the
 * `permit`, out of the reads' shared transaction first, and holds it until it is over, its tries
 * while another process holds the lock included.
 */
const sqlClient = (
  { db, execute, measured, prepare }: SqliteConnection,
  snapshot: ReadSnapshot,
  permit: Effect.Semaphore
) => {
  /**
   * A statement as the `SqlClient` runs it: a failure is the `SqlError` it expects. Outside a
   * transaction (a `BEGIN IMMEDIATE` among them), one that met another process's lock is tried
   * again; the connection is its own meanwhile, as the `SqlClient` holds the permit for the
   * statement (see `acquirer`) or its transaction holds it.
   */
  const attempt = <A>(run: () => A) =>
    retryingWhileLocked(db, run, (cause) => new SqlError({ cause, message: "Failed to execute statement" }), (effect) => effect)
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

  const taken = Effect.tap(permit.take(1), snapshot.end)
  return SqlClient.make({
    acquirer: Effect.as(Effect.acquireRelease(taken, () => permit.release(1)), connection),
    transactionAcquirer: Effect.uninterruptibleMask((restore) =>
      Effect.as(
        Effect.zipRight(restore(taken), Effect.tap(Effect.scope, (scope) => Scope.addFinalizer(scope, permit.release(1)))),
        connection
      )
    ),
    compiler: SqlStatement.makeCompilerSqlite(Str.camelToSnake),
    // Transactions take the write lock when they begin, as a batch does (`sqliteBatch.ts`).
    beginTransaction: "BEGIN IMMEDIATE",
    transformRows: SqlStatement.defaultTransforms(Str.snakeToCamel).array,
    spanAttributes: [["db.system.name", "sqlite"]]
  })
}

const inTransaction: SyncBatch = { _tag: "InTransaction" }
const locked: SyncBatch = { _tag: "Locked" }

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
