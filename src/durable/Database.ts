/**
 * The database under every storage: the `SqlClient` that reads use, and a group-commit writer for
 * the hot path. A write is a unit of statements that commit together or not at all; units handed
 * in while a transaction is being written go together into the next one, so concurrent runs share
 * transactions instead of paying one each. A unit is acknowledged only once its transaction has
 * committed. One implementation per dialect: `SqliteDatabase` (the embedded default, statements
 * executed synchronously by better-sqlite3) and `PgDatabase`.
 */
import type { SqlClient } from "@effect/sql"
import { Chunk, Context, Deferred, Effect, Either, Exit, Queue, Schedule, type Stream, String as Str } from "effect"
import { StoreError } from "./StoreError.js"


/** A value a statement binds. */
export type SqlValue = string | number | null

/** A statement with `?` placeholders (each dialect rewrites them as it needs) and its values. */
export interface Statement {
  readonly sql: string
  readonly params: ReadonlyArray<SqlValue>
  /**
   * Set on an INSERT of this many rows into a table keyed by an autoincrement `seq`, written
   * without `RETURNING`: the statement returns each inserted row's `{ seq }`, in the order of its
   * `VALUES`. Each dialect answers the cheapest way it can (SQLite numbers one statement's rows
   * consecutively up to the last inserted rowid; PostgreSQL adds `RETURNING seq`). The events'
   * insert is the only such statement: on PostgreSQL it also marks a transaction that numbers
   * events, which takes their lock first (`PgDatabase`).
   */
  readonly sequencedRows?: number | undefined
}

/** A row a statement returned, by column name as the database spells it (snake_case). */
export type Row = Readonly<Record<string, unknown>>

/** Column names as the record schemas spell them, each worked out once: the columns are few, the rows many. */
const camelNames = new Map<string, string>()
const camelName = (column: string): string => {
  let name = camelNames.get(column)
  if (name === undefined) {
    name = Str.snakeToCamel(column)
    camelNames.set(column, name)
  }
  return name
}

/** A row read without the client's name transform, with the names the record schemas use. */
export const camelCaseKeys = (row: Row): Row => {
  const renamed: Record<string, unknown> = {}
  for (const column of Object.keys(row)) renamed[camelName(column)] = row[column]
  return renamed
}

/**
 * Retries for processes that start together on one database and race to set it up (open it in
 * WAL mode, migrate it, create the cluster's tables): the loser is refused for a moment, then finds
 * the work done.
 */
export const startupContention = Schedule.exponential("50 millis").pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(8)))

/**
 * Statements that commit together. With `guards`, the unit is written only when each guard
 * returns a row, checked in order inside the same transaction (fencing checks); otherwise it is
 * refused. On PostgreSQL each guard is a statement of its own: one after a guard that waited for a
 * lock sees what committed while it waited.
 */
export interface WriteUnit {
  readonly guards?: ReadonlyArray<Statement>
  readonly statements: ReadonlyArray<Statement>
}

/** What became of a unit: its statements' rows in order, or refused by its guard. */
export type UnitResult =
  | { readonly _tag: "Written"; readonly rows: ReadonlyArray<ReadonlyArray<Row>> }
  | { readonly _tag: "Refused" }

/** Counters for benchmarks and tests: SQL statements executed, transactions that wrote, and time they took. */
export interface DatabaseStats {
  readonly statements: number
  readonly writeTransactions: number
  /**
   * Milliseconds the group-commit writer waited for `COMMIT` to return: on SQLite, the sync that
   * makes a transaction durable, which holds the one thread. `null` where it is not measured
   * (PostgreSQL, whose commits do not hold the process).
   */
  readonly commitMillis: number | null
  /**
   * Milliseconds spent executing statements (`COMMIT` aside): on SQLite, time inside SQLite on the
   * process's one thread. `null` where it is not measured (PostgreSQL, a server of its own).
   */
  readonly statementMillis: number | null
}

/**
 * Messages to the other processes on the same store as they happen, none stored: what a message
 * sent is handed to every process listening on its channel then (PostgreSQL's `LISTEN`/`NOTIFY`;
 * on SQLite a file beside the store's, `sqliteChannel.ts`), the sender's own included where the
 * channel may go deaf (a listener tells it is alive by hearing itself). A message is at most
 * `maxMessageBytes` long in UTF-8.
 */
export interface StoreChannel {
  readonly maxMessageBytes: number
  /**
   * Whether a listener may stop hearing without being told (a connection cut by a database
   * restart): listeners then say they are there now and then, and listen again when they hear
   * nothing for a while.
   */
  readonly mayGoDeaf: boolean
  /**
   * The messages sent on `channel` from now on, for as long as the stream is run: from the call on
   * where the channel can tell (SQLite's file; a stream run again goes on where it was), from when
   * its listening connection is open on PostgreSQL.
   */
  readonly listen: (channel: string) => Stream.Stream<string, StoreError>
  readonly send: (channel: string, message: string) => Effect.Effect<void, StoreError>
  /** `send` on this thread, at once, where the channel writes so (a message that cannot be sent is dropped). */
  readonly sendNow?: ((channel: string, message: string) => void) | undefined
}

/** The database. */
export class Database extends Context.Tag("foundry/Database")<Database, {
  readonly dialect: "sqlite" | "pg"
  readonly sql: SqlClient.SqlClient
  /**
   * Reads with one statement, outside any write transaction and without the `SqlClient`'s
   * machinery: for the reads on every run's path. Rows keep the database's column names. Not for
   * use inside a `SqlClient` transaction: on SQLite it waits for the connection that transaction holds.
   */
  readonly read: (statement: Statement) => Effect.Effect<ReadonlyArray<Row>, StoreError>
  /** Writes the unit in the next group commit; succeeds once that transaction has committed. */
  readonly write: (unit: WriteUnit) => Effect.Effect<UnitResult, StoreError>
  readonly stats: Effect.Effect<DatabaseStats>
  /** The channel to the other processes on this store; none for a store in memory, one process's alone. */
  readonly channel?: StoreChannel | undefined
}>() {}

/** A unit's outcome inside a batch: its result, or why its statements failed (the rest still commit). */
export type BatchOutcome = UnitResult | { readonly _tag: "Failed"; readonly message: string }

/** Writes units in one transaction; fails as a whole only when the transaction itself fails. */
export type BatchWriter = (units: ReadonlyArray<WriteUnit>) => Effect.Effect<ReadonlyArray<BatchOutcome>, StoreError>

/** The most units one transaction writes. */
const maxBatch = 256

/** What a waiting writer is told once its batch is over. */
const settled = (written: Either.Either<ReadonlyArray<BatchOutcome>, StoreError>, index: number): Exit.Exit<UnitResult, StoreError> => {
  if (written._tag === "Left") return Exit.fail(written.left)
  const outcome = written.right[index]
  return outcome === undefined || outcome._tag === "Failed"
    ? Exit.fail(new StoreError({ operation: "write", message: outcome?.message ?? "the unit was not written" }))
    : Exit.succeed(outcome)
}

/**
 * The group-commit loop over a dialect's batch writer, running in the current scope: every unit
 * offered while a batch is being written goes into the next batch.
 */
export const groupCommit = (writeBatch: BatchWriter) =>
  Effect.gen(function*() {
    interface Pending {
      readonly unit: WriteUnit
      readonly done: Deferred.Deferred<UnitResult, StoreError>
    }
    const pending = yield* Effect.acquireRelease(Queue.unbounded<Pending>(), Queue.shutdown)
    yield* Effect.gen(function*() {
      const batch = Chunk.toReadonlyArray(yield* Queue.takeBetween(pending, 1, maxBatch))
      const written = yield* Effect.either(writeBatch(batch.map((p) => p.unit)))
      for (const [index, item] of batch.entries()) Deferred.unsafeDone(item.done, settled(written, index))
    }).pipe(Effect.forever, Effect.forkScoped)

    return (unit: WriteUnit): Effect.Effect<UnitResult, StoreError> =>
      Effect.flatMap(Deferred.make<UnitResult, StoreError>(), (done) =>
        Effect.zipRight(Queue.offer(pending, { unit, done }), Deferred.await(done)))
  })

/**
 * What a synchronous batch writer did with a batch: wrote it (or failed it as a whole), or could
 * not begin, because the connection is inside a client's transaction or because another process
 * holds the database's write lock.
 */
export type SyncBatch =
  | { readonly _tag: "Done"; readonly written: Either.Either<ReadonlyArray<BatchOutcome>, StoreError> }
  | { readonly _tag: "InTransaction" }
  | { readonly _tag: "Locked" }

/**
 * Group commit for a database whose batches are written synchronously (SQLite through
 * better-sqlite3): a unit waits in a plain array, and the batch is written once the fibers that
 * can run now have run, so every unit they hand in shares it. `writeNow` writes a batch now, or
 * says why it could not begin. Inside a client's transaction, the batch waits for `whenFree`, which
 * runs its effect once that transaction is over. Locked by another process, it is tried again a
 * few milliseconds later, the thread free meanwhile, for up to `lockWait` milliseconds; then the
 * batch fails, and its writers decide what to do (a run's step waits the store out).
 */
export const groupCommitSync = (
  writeNow: (units: ReadonlyArray<WriteUnit>) => SyncBatch,
  whenFree: (write: () => void) => void,
  lockWait: number
) => {
  interface Pending {
    readonly unit: WriteUnit
    readonly resume: (exit: Exit.Exit<UnitResult, StoreError>) => void
    /** When the unit first met another process's lock; each unit waits `lockWait` from then. */
    lockedSince: number | undefined
  }
  let pending: Array<Pending> = []
  let scheduled = false
  // Tries in a row that another process's lock kept a batch from beginning: the next waits longer.
  let lockedTries = 0
  const flush = (): void => {
    scheduled = false
    if (pending.length === 0) return
    const batch = pending.length <= maxBatch ? pending : pending.slice(0, maxBatch)
    const result = writeNow(batch.map((p) => p.unit))
    if (result._tag === "InTransaction") {
      // Everything stays pending, and only `whenFree` flushes next: no flush per turn of the loop
      // while the transaction lasts.
      scheduled = true
      return whenFree(flush)
    }
    if (result._tag === "Locked") return waitForLock(batch)
    lockedTries = 0
    pending = pending.length <= maxBatch ? [] : pending.slice(maxBatch)
    if (pending.length > 0) schedule()
    for (const [index, item] of batch.entries()) item.resume(settled(result.written, index))
  }
  // Tried again shortly; a unit that has waited `lockWait` for the lock fails, the others wait on.
  const waitForLock = (batch: ReadonlyArray<Pending>): void => {
    const now = Date.now()
    const expired = new Set<Pending>()
    for (const item of batch) {
      item.lockedSince ??= now
      if (now - item.lockedSince >= lockWait) expired.add(item)
    }
    if (expired.size > 0) {
      pending = pending.filter((item) => !expired.has(item))
      const locked = new StoreError({ operation: "write", message: `database is locked: another process has held its write lock for over ${lockWait} ms` })
      for (const item of expired) item.resume(Exit.fail(locked))
    }
    if (pending.length === 0) return
    scheduled = true
    setTimeout(flush, Math.min(2 ** lockedTries++, 50))
  }
  // After the I/O callbacks of this turn of the event loop and the fibers they woke: units of
  // requests that arrived together share the transaction (a microtask would commit each
  // request's units alone, one synced commit each).
  const schedule = () => {
    if (scheduled) return
    scheduled = true
    setImmediate(flush)
  }
  return (unit: WriteUnit): Effect.Effect<UnitResult, StoreError> =>
    Effect.async<UnitResult, StoreError>((resume) => {
      pending.push({ unit, resume, lockedSince: undefined })
      schedule()
    })
}
