/**
 * The `Database` on PostgreSQL through `@effect/sql-pg`: a batch is one transaction on one pooled
 * connection, each unit in a savepoint so that a failing unit is rolled back alone. Values come
 * back with the same names and shapes as on SQLite.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { createHash } from "node:crypto"
import { Array as Arr, Context, Duration, Effect, Layer, Redacted, Schedule, Stream, String as Str } from "effect"
import { getTypeParser } from "pg-types"
import { type BatchOutcome, Database, groupCommit, type Row, type Statement, type StoreChannel, type WriteUnit } from "./Database.js"
import { migrate } from "./migrations.js"
import { messageOf, StoreError } from "./StoreError.js"

/** PostgreSQL's type oid of BIGINT (`int8`); BIGSERIAL columns have it too. */
const int8Oid = 20

/**
 * BIGINT as a number. node-postgres returns it as a string (it may exceed 2^53), but the store
 * keeps milliseconds and sequence numbers in it, which are safe integers, and the record schemas
 * expect numbers. A value that is not a safe integer stays a string, so decoding it fails loudly
 * instead of losing precision.
 */
const parseInt8 = (text: string): number | string => {
  const value = Number(text)
  return Number.isSafeInteger(value) ? value : text
}

/**
 * The pool's type parsers: node-postgres's defaults (from `pg-types`), except BIGINT in text
 * format. Set per pool, so nothing else in the process that uses `pg` is affected.
 */
const types = {
  getTypeParser: (oid: number, format?: "text" | "binary") =>
    format === "binary" ? getTypeParser(oid, "binary") : oid === int8Oid ? parseInt8 : getTypeParser(oid, "text")
}

/**
 * The PostgreSQL client the store runs on: the store's name transforms and type parsers, and
 * `connectTimeout` for connecting (node-postgres waits forever by default on a server that takes
 * the connection and never answers) and for a query's wait for a pooled connection.
 */
export const clientLayer = (url: Redacted.Redacted | string, connectTimeout?: Duration.DurationInput) =>
  PgClient.layer({
    url: typeof url === "string" ? Redacted.make(url) : url,
    transformQueryNames: Str.camelToSnake,
    transformResultNames: Str.snakeToCamel,
    types,
    ...(connectTimeout === undefined ? {} : { connectTimeout: Duration.decode(connectTimeout) })
  })

/**
 * A deadlock's victim (40P01) or a serialization failure (40001): PostgreSQL undid the statement,
 * and the same write can simply be tried again. Runners write to one database at once, and two
 * transactions that lock the same rows in another order end in a deadlock now and then.
 */
const isTransient = (cause: unknown): boolean => {
  const inner = typeof cause === "object" && cause !== null && "cause" in cause ? cause.cause : undefined
  const code = typeof inner === "object" && inner !== null && "code" in inner ? inner.code : undefined
  return code === "40P01" || code === "40001"
}

/** Up to four more tries, a few milliseconds apart, jittered so that the two sides do not meet again. */
const transientRetry = Schedule.exponential("5 millis").pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(4)))

/** A unit to write again alone. */
const again = { _tag: "Again" } as const

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
 * schemas of the database (tests' own, say) hear nothing of this one.
 */
const channelOf = (client: PgClient.PgClient) => {
  // Not counted with the store's statements: the benchmarks count those a run makes.
  const execute = (statement: Statement) => client.unsafe<Row>(numbered(statement.sql), statement.params).withoutTransform
  return Effect.map(execute({ sql: "SELECT current_schema() AS schema", params: [] }), (rows): StoreChannel => {
    const schema = createHash("sha256").update(String(rows[0]?.["schema"])).digest("hex").slice(0, 16)
    const named = (channel: string) => `${channel}_${schema}`
    return {
      // PostgreSQL's limit is 8,000 bytes, the channel's name aside.
      maxMessageBytes: 7900,
      // `@effect/sql-pg` does not report its listening connection cut.
      mayGoDeaf: true,
      listen: (channel) => client.listen(named(channel)).pipe(Stream.mapError((cause) => new StoreError({ operation: "listen", message: messageOf(cause) }))),
      // `pg_notify`, as `NOTIFY` takes no parameters (the client's own `notify` binds one, and fails).
      send: (channel, message) =>
        execute({ sql: "SELECT pg_notify(?, ?)", params: [named(channel), message] }).pipe(
          Effect.asVoid,
          Effect.mapError((cause) => new StoreError({ operation: "send", message: messageOf(cause) }))
        )
    }
  })
}

/** The database over the provided PostgreSQL client, for the current scope. */
export const make = Effect.gen(function*() {
  const client = yield* PgClient.PgClient
  const sql: SqlClient.SqlClient = client
  let statements = 0
  let writeTransactions = 0
  const texts = new Map<string, string>()

  const execute = (statement: Statement): Effect.Effect<ReadonlyArray<Row>, unknown> =>
    Effect.suspend(() => {
      statements++
      const source = statement.sequencedRows === undefined ? statement.sql : `${statement.sql} RETURNING seq`
      let text = texts.get(source)
      if (text === undefined) {
        text = numbered(source)
        texts.set(source, text)
      }
      return sql.unsafe<Row>(text, statement.params).withoutTransform
    })

  const writeUnit = (unit: WriteUnit) =>
    Effect.gen(function*() {
      if (unit.guard !== undefined && (yield* execute(unit.guard)).length === 0) return { _tag: "Refused" } as const
      const rows: Array<ReadonlyArray<Row>> = []
      for (const statement of unit.statements) rows.push(yield* execute(statement))
      return { _tag: "Written", rows } as const
    })

  /** `transaction` after the events' lock when one of `units` inserts events. */
  const inEventOrder = <A, E, R>(units: ReadonlyArray<WriteUnit>, transaction: Effect.Effect<A, E, R>) =>
    units.some(insertsEvents) ? Effect.zipRight(execute(eventOrder), transaction) : transaction

  /** A unit in a transaction of its own, tried again while PostgreSQL undoes it as a deadlock's victim. */
  const writeAlone = (unit: WriteUnit): Effect.Effect<BatchOutcome> =>
    sql.withTransaction(inEventOrder([unit], writeUnit(unit))).pipe(
      Effect.tap(() => Effect.sync(() => writeTransactions++)),
      Effect.retry({ schedule: transientRetry, while: isTransient }),
      Effect.catchAll((cause) => Effect.succeed({ _tag: "Failed", message: messageOf(cause) } as const))
    )

  const write = yield* groupCommit((units) => {
    const [only] = units
    if (units.length === 1 && only !== undefined) return Effect.map(writeAlone(only), (outcome) => [outcome])
    return sql.withTransaction(inEventOrder(
      units,
      Effect.forEach(units, (unit): Effect.Effect<BatchOutcome | typeof again> =>
        // A nested transaction is a savepoint: a failing unit rolls back to it, the others stay.
        sql.withTransaction(writeUnit(unit)).pipe(
          Effect.catchAll((cause) => Effect.succeed(isTransient(cause) ? again : { _tag: "Failed", message: messageOf(cause) } as const))
        ))
    )).pipe(
      Effect.tap(() => Effect.sync(() => writeTransactions++)),
      Effect.retry({ schedule: transientRetry, while: isTransient }),
      Effect.mapError((cause) => new StoreError({ operation: "write", message: messageOf(cause) })),
      // A unit undone as a deadlock's victim wrote nothing: it goes again alone, once the batch's
      // locks are released, rather than failing its run.
      Effect.flatMap((outcomes) =>
        Effect.forEach(Arr.zip(units, outcomes), ([unit, outcome]) => outcome._tag === "Again" ? writeAlone(unit) : Effect.succeed(outcome))
      )
    )
  })

  return Database.of({
    dialect: "pg",
    sql,
    read: (statement) => execute(statement).pipe(Effect.mapError((cause) => new StoreError({ operation: "read", message: messageOf(cause) }))),
    write,
    stats: Effect.sync(() => ({ statements, writeTransactions, commitMillis: null, statementMillis: null })),
    channel: yield* Effect.mapError(channelOf(client), (cause) => new StoreError({ operation: "connect", message: messageOf(cause) }))
  })
})

/**
 * The database at `url`, migrated, with its `SqlClient`. A failure to connect is a `StoreError`
 * with operation `connect`; `connectTimeout` bounds connecting (see `clientLayer`).
 */
export const layer = (url: Redacted.Redacted | string, connectTimeout?: Duration.DurationInput): Layer.Layer<Database | SqlClient.SqlClient, StoreError> =>
  Layer.scopedContext(
    Effect.gen(function*() {
      const database = yield* make
      yield* migrate
      return Context.make(Database, database).pipe(Context.add(SqlClient.SqlClient, database.sql))
    })
  ).pipe(
    Layer.provide(clientLayer(url, connectTimeout)),
    Layer.mapError((error) => error._tag === "StoreError" ? error : new StoreError({ operation: "connect", message: messageOf(error) }))
  )
