/**
 * The `Database` on PostgreSQL: a batch is one transaction on one pooled connection; when one of
 * its units fails, it is rolled back and written again with each unit in a savepoint, so that the
 * failing unit is rolled back alone. The store's statements run straight on node-postgres
 * (`pgConnection.ts`); its `SqlClient` is `@effect/sql-pg`'s over the same pool. Values come back
 * with the same names and shapes as on SQLite.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { createHash } from "node:crypto"
import { Array as Arr, Context, Data, type Duration, Effect, Layer, type Redacted, Schedule, Stream } from "effect"
import type * as Pg from "pg"
import { type BatchOutcome, Database, groupCommit, type Row, type Statement, type StoreChannel, type WriteUnit } from "./Database.js"
import { migrate } from "./migrations.js"
import { begin, clientLayer, flight, isServerError, PgPools, plain, query, read, type Sent, transaction, withConnection } from "./pgConnection.js"
import { messageOf, StoreError } from "./StoreError.js"

const codeOf = (cause: unknown): unknown => typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined
const tableOf = (cause: unknown): unknown => typeof cause === "object" && cause !== null && "table" in cause ? cause.table : undefined

/**
 * A message numbered as another transaction numbered one of its conversation's (a unique violation,
 * 23505, on the messages, whose only key is that numbering). The insert numbers a message after
 * its conversation's last (`appendMessages`); two transactions that do not wait for each other (a
 * runner's step under the conversation's lease, a cancel of another of its runs or a submission
 * without it; the events' lock orders them only when both insert events) can read the same last,
 * and the second to insert finds the first's row once it commits. Written again whole, its guards
 * read again, the unit numbers after it.
 */
const isNumberTaken = (cause: unknown): boolean => codeOf(cause) === "23505" && tableOf(cause) === "foundry_messages"

/**
 * A deadlock's victim (40P01), a serialization failure (40001), or a message's number taken at once
 * (`isNumberTaken`): PostgreSQL undid the statement, and the same write can simply be tried again.
 * Runners write to one database at once, and two transactions that lock the same rows in another
 * order end in a deadlock now and then.
 */
const isTransient = (cause: unknown): boolean => {
  const code = codeOf(cause)
  return code === "40P01" || code === "40001" || isNumberTaken(cause)
}

/** Up to four more tries, a few milliseconds apart, jittered so that the two sides do not meet again. */
const transientRetry = Schedule.exponential("5 millis").pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(4)))

/** A unit to write again alone. */
const again = { _tag: "Again" } as const

/** A unit of a batch written without savepoints failed: the batch is rolled back, to be written unit by unit. */
class UnitFailed extends Data.TaggedError("UnitFailed")<{ readonly cause: Error }> {}

/** A unit of a batch written without savepoints was refused by its guard: the batch goes again without it. */
class UnitRefused extends Data.TaggedError("UnitRefused")<{ readonly unit: number }> {}

/** The error a refusing guard raises when its guard returns no row (`division_by_zero`). */
const refusedCode = "22012"

/** `numbered(source())`, made once a `key` and kept in `made`. */
const numberedOnce = (made: Map<string, string>, key: string, source: () => string): string => {
  let text = made.get(key)
  if (text === undefined) {
    text = numbered(source())
    made.set(key, text)
  }
  return text
}

/**
 * The guard as a statement that fails when the guard returns no row, so that the statements sent
 * after it in the same transaction are not run (one over the count of its rows). A guard's
 * `FOR UPDATE` in the inner query locks the rows it returns, as before. (A guard that divided by
 * zero itself would read as refused: none does.) The inner query on lines of its own, as it may
 * end with a comment.
 */
const refusingSql = (guard: Statement): string => `SELECT 1 / COUNT(*) AS guard FROM (${guard.sql}\n) AS guarded`

/**
 * Taken first by every transaction that inserts events, held until it ends: events are numbered in
 * the order their transactions commit, across processes. A sequence number is taken before the
 * commit, so without it a transaction could commit an event numbered below one another process
 * committed already, and a reader paging by number (`GET /api/events?after=`, a process's tail)
 * would have passed it. First, before any row lock, so that it never waits while holding one.
 */
// Keyed by two integers, a key space apart from the one-number locks `@effect/cluster` holds shards
// with; the second the schema's, since advisory locks are the database's: stores in other schemas
// (tests' own, say) do not wait for this one.
const eventOrder: Statement = { sql: "SELECT pg_advisory_xact_lock(hashtext('foundry_events'), hashtext(current_schema()))", params: [] }

const insertsEvents = (unit: WriteUnit): boolean => unit.statements.some((statement) => statement.sequencedRows !== undefined)

/** `?` placeholders as PostgreSQL's numbered ones (statements hold no `?` in literals). */
const numbered = (sql: string): string => {
  let index = 0
  return sql.replace(/\?/g, () => `$${++index}`)
}

/**
 * `LISTEN`/`NOTIFY` for the store in the connection's schema. Channels are the database's, so a
 * name carries the schema's (hashed: a channel's name is at most 63 bytes): stores in other
 * schemas of the database (tests' own, say) hear nothing of this one. Its statements are not
 * counted with the store's: the benchmarks count those a run makes.
 */
const channelOf = (pool: Pg.Pool, client: PgClient.PgClient) =>
  Effect.map(read(pool, { text: "SELECT current_schema() AS schema" }), (rows): StoreChannel => {
    const schema = createHash("sha256").update(String(rows[0]?.["schema"])).digest("hex").slice(0, 16)
    const named = (channel: string) => `${channel}_${schema}`
    return {
      // PostgreSQL's limit is 8,000 bytes, the channel's name aside.
      maxMessageBytes: 7900,
      // `@effect/sql-pg` does not report its listening connection cut.
      mayGoDeaf: true,
      listen: (channel) => client.listen(named(channel)).pipe(Stream.mapError((cause) => new StoreError({ operation: "listen", message: messageOf(cause) }))),
      // `pg_notify`, as `NOTIFY` takes no parameters.
      send: (channel, message) =>
        read(pool, { text: "SELECT pg_notify($1, $2)", values: [named(channel), message] }).pipe(
          Effect.asVoid,
          Effect.mapError((cause) => new StoreError({ operation: "send", message: messageOf(cause) }))
        )
    }
  })

/** The database over the provided pool and its `PgClient`, for the current scope. */
export const make = Effect.gen(function*() {
  const { names, pool, writer } = yield* PgPools
  const client = yield* PgClient.PgClient
  let statements = 0
  let writeTransactions = 0
  const texts = new Map<string, string>()
  const guardTexts = new Map<string, string>()

  const textOf = (statement: Statement): string => {
    const source = statement.sequencedRows === undefined ? statement.sql : `${statement.sql} RETURNING seq`
    return numberedOnce(texts, source, () => source)
  }
  const refusing = (guard: Statement): string => numberedOnce(guardTexts, guard.sql, () => refusingSql(guard))

  const execute = (connection: Pg.PoolClient, statement: Statement): Effect.Effect<ReadonlyArray<Row>, Error> =>
    Effect.suspend(() => {
      statements++
      return query(connection, names.statement(textOf(statement), statement.params))
    })

  const writeUnit = (connection: Pg.PoolClient, unit: WriteUnit) =>
    Effect.gen(function*() {
      for (const guard of unit.guards ?? []) if ((yield* execute(connection, guard)).length === 0) return { _tag: "Refused" } as const
      const rows: Array<ReadonlyArray<Row>> = []
      for (const statement of unit.statements) rows.push(yield* execute(connection, statement))
      return { _tag: "Written", rows } as const
    })

  /** The events' lock first, when one of `units` inserts events. */
  const inEventOrder = (connection: Pg.PoolClient, units: ReadonlyArray<WriteUnit>) =>
    units.some(insertsEvents) ? Effect.asVoid(execute(connection, eventOrder)) : Effect.void

  const counted = Effect.sync(() => void writeTransactions++)

  /** Whether a write that failed so goes again: unnamed, when names were refused; a deadlock's victim. */
  const goesAgain = (cause: unknown): boolean => names.refused(cause) || isTransient(cause)

  /** A unit in a transaction of its own, tried again while PostgreSQL undoes it as a deadlock's victim. */
  const writeAlone = (unit: WriteUnit): Effect.Effect<BatchOutcome> =>
    transaction(writer, (connection) => Effect.zipRight(inEventOrder(connection, [unit]), writeUnit(connection, unit))).pipe(
      Effect.zipLeft(counted),
      Effect.retry({ schedule: transientRetry, while: goesAgain }),
      Effect.catchAll((cause) => Effect.succeed({ _tag: "Failed", message: messageOf(cause) } as const))
    )

  /**
   * The batch with no savepoint (units seldom fail and guards seldom refuse), all its statements
   * sent at once after `BEGIN`, `COMMIT` last. Each of a unit's guards goes as `refusing` it, so
   * that the statements after it run only if it returns a row; the server runs them in order, so it sees
   * what the units before it wrote. A unit that fails or is refused fails the transaction. The
   * units in `refused` (refused in an earlier try) are left out.
   */
  const writeTogether = (units: ReadonlyArray<WriteUnit>, refused: ReadonlySet<number>) =>
    withConnection(writer, (connection) =>
      Effect.gen(function*() {
        const sent: Array<Sent> = [begin]
        /** Whose each statement sent is (a unit's, or its guard), by its place; none for the others. */
        const owners: Array<{ readonly unit: number; readonly guard: boolean } | undefined> = [undefined]
        const store = (text: string, statement: Statement, owner?: { readonly unit: number; readonly guard: boolean }) => {
          statements++
          sent.push(names.statement(text, statement.params))
          owners.push(owner)
        }
        if (units.some((unit, index) => !refused.has(index) && insertsEvents(unit))) store(textOf(eventOrder), eventOrder)
        for (const [index, unit] of units.entries()) {
          if (refused.has(index)) continue
          for (const guard of unit.guards ?? []) store(refusing(guard), guard, { unit: index, guard: true })
          for (const statement of unit.statements) store(textOf(statement), statement, { unit: index, guard: false })
        }
        sent.push(plain("COMMIT"))
        const answers = yield* flight(connection, sent)
        const written: Array<Array<ReadonlyArray<Row>>> = units.map(() => [])
        for (const [index, answer] of answers.entries()) {
          const item = owners[index]
          if (answer._tag === "Left") {
            // Only what the server answered is a unit's: it answers in order, so it did not reach
            // `COMMIT`. A connection that broke may have committed the batch: it fails as it is,
            // never written again.
            if (item?.unit === undefined || !isServerError(answer.left)) return yield* Effect.fail(answer.left)
            return yield* Effect.fail(
              item.guard === true && codeOf(answer.left) === refusedCode
                ? new UnitRefused({ unit: item.unit })
                : new UnitFailed({ cause: answer.left })
            )
          }
          if (item?.unit !== undefined && item.guard !== true) written[item.unit]?.push(answer.right.rows)
        }
        // A transaction that failed answers `COMMIT` with a rollback, and no error: only in a case
        // no answer above told of.
        const committed = answers.at(-1)
        if (committed?._tag === "Right" && committed.right.command !== "COMMIT") {
          return yield* Effect.fail(new Error(`the transaction was rolled back (${committed.right.command})`))
        }
        return written.map((rows, index): BatchOutcome => refused.has(index) ? { _tag: "Refused" } : { _tag: "Written", rows })
      }))

  /** The batch again, each unit in a savepoint: a failing unit rolls back to it, the others stay. */
  const writeApart = (units: ReadonlyArray<WriteUnit>) =>
    transaction(writer, (connection) =>
      Effect.zipRight(
        inEventOrder(connection, units),
        Effect.forEach(units, (unit): Effect.Effect<BatchOutcome | typeof again, Error> =>
          query(connection, plain("SAVEPOINT unit")).pipe(
            Effect.zipRight(writeUnit(connection, unit)),
            Effect.tap(() => query(connection, plain("RELEASE SAVEPOINT unit"))),
            Effect.catchAll((cause) =>
              Effect.as(
                query(connection, plain("ROLLBACK TO SAVEPOINT unit")),
                goesAgain(cause) ? again : { _tag: "Failed", message: messageOf(cause) } as const
              )
            )
          ))
      )).pipe(
        Effect.zipLeft(counted),
        Effect.retry({ schedule: transientRetry, while: goesAgain }),
        // A unit undone as a deadlock's victim wrote nothing: it goes again alone, once the batch's
        // locks are released, rather than failing its run.
        Effect.flatMap((outcomes) =>
          Effect.forEach(Arr.zip(units, outcomes), ([unit, outcome]) => outcome._tag === "Again" ? writeAlone(unit) : Effect.succeed(outcome))
        )
      )

  /**
   * The batch in one flight; once for each unit refused, again without it (it wrote nothing, as
   * when its guard is read first); a unit that failed sends it down the savepoint path.
   */
  const writeBatch = (units: ReadonlyArray<WriteUnit>, refused: ReadonlySet<number>): Effect.Effect<ReadonlyArray<BatchOutcome>, Error> =>
    writeTogether(units, refused).pipe(
      Effect.zipLeft(counted),
      Effect.retry({
        schedule: transientRetry,
        while: (cause) => {
          const inner = cause instanceof UnitFailed ? cause.cause : cause
          // Named statements refused: the batch again, unnamed. A deadlock's victim: again too,
          // when the batch's (a unit alone's statement is the batch's).
          return names.refused(inner) || (isTransient(inner) && (units.length === 1 || !(cause instanceof UnitFailed)))
        }
      }),
      Effect.catchIf(
        (cause): cause is UnitFailed | UnitRefused => cause instanceof UnitFailed || cause instanceof UnitRefused,
        (failed): Effect.Effect<ReadonlyArray<BatchOutcome>, Error> => {
          if (failed._tag === "UnitRefused") {
            const now = new Set([...refused, failed.unit])
            return now.size === units.length ? Effect.succeed(units.map(() => ({ _tag: "Refused" } as const))) : writeBatch(units, now)
          }
          return units.length > 1 ? writeApart(units) : Effect.succeed([{ _tag: "Failed", message: messageOf(failed.cause) }])
        }
      )
    )

  const write = yield* groupCommit((units) =>
    writeBatch(units, new Set()).pipe(
      Effect.mapError((cause) => new StoreError({ operation: "write", message: messageOf(cause) }))
    ))

  return Database.of({
    dialect: "pg",
    sql: client,
    read: (statement) =>
      Effect.suspend(() => {
        statements++
        const text = textOf(statement)
        // Named statements refused: once more, unnamed.
        return Effect.catchIf(read(pool, names.statement(text, statement.params)), names.refused, () => read(pool, names.statement(text, statement.params)))
      }).pipe(Effect.mapError((cause) => new StoreError({ operation: "read", message: messageOf(cause) }))),
    write,
    stats: Effect.sync(() => ({ statements, writeTransactions, commitMillis: null, statementMillis: null })),
    channel: yield* Effect.mapError(channelOf(pool, client), (cause) => new StoreError({ operation: "connect", message: messageOf(cause) }))
  })
})

/**
 * The database at `url`, migrated, with its `SqlClient`. A failure to connect is a `StoreError`
 * with operation `connect`; `connectTimeout` bounds connecting, and `maxConnections` the
 * connections open at once (see `pgConnection.ts`).
 */
export const layer = (
  url: Redacted.Redacted | string,
  connectTimeout?: Duration.DurationInput,
  maxConnections?: number
): Layer.Layer<Database | SqlClient.SqlClient, StoreError> =>
  Layer.scopedContext(
    Effect.gen(function*() {
      const database = yield* make
      yield* migrate
      return Context.make(Database, database).pipe(Context.add(SqlClient.SqlClient, database.sql))
    })
  ).pipe(
    Layer.provide(clientLayer(url, connectTimeout, maxConnections)),
    Layer.mapError((error) => error._tag === "StoreError" ? error : new StoreError({ operation: "connect", message: messageOf(error) }))
  )
