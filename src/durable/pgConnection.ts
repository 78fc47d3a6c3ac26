/**
 * The connections of a `PgDatabase`: one node-postgres pool for the current scope, the store's own
 * statements run straight on it, and its `PgClient` made over the same pool for everything else
 * (migrations, the storages written with `@effect/sql`, the cluster). A run's statements do not
 * go through `@effect/sql`: around each one it makes a span, takes the connection through fibers of
 * its own and copies the fiber's context, about a hundred Effect operations a statement where the
 * statement itself is one callback (the section "PostgreSQL's statements on the pool" in
 * docs/decisions.md).
 */
import { createHash } from "node:crypto"
import { SqlError } from "@effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import { Context, Duration, Effect, Either, Layer, Redacted, String as Str } from "effect"
import * as Pg from "pg"
import { getTypeParser } from "pg-types"
import { defaultStoreMaxConnections } from "../definitions/configFields.js"
import type { Row } from "./Database.js"
import { send, watchAnswers } from "./silentConnections.js"

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

/** How long connecting may take when the config does not say: `PgClient`'s own default. */
const defaultConnectTimeout = Duration.seconds(5)

/**
 * The store's connections: `pool` for reads and for its `PgClient`, and `writer`, the group
 * commit's one connection, pipelined (node-postgres sends a statement without waiting for the
 * answers to those before it), so that a batch's statements go to the server together.
 */
export class PgPools extends Context.Tag("foundry/PgPools")<PgPools, {
  readonly pool: Pg.Pool
  readonly writer: Pg.Pool
  readonly names: StatementNames
}>() {}

/**
 * The names the store's statements are prepared under: the server parses and plans a named
 * statement once a connection, not at every use (the most of its work a statement). A name is
 * made of its text's hash, so that it means the same text in every process: a pooler may hand one
 * process's statement to a server connection another prepared. The first `maxNamed` texts of at
 * most `maxNamedParams` values are named, the hot ones: each costs the server tens of kilobytes a
 * connection, and some texts come in many sizes (an insert of as many events as a step has). None
 * from the first sign that names cannot be used here: a pooler in transaction mode in between
 * (a statement prepared on one of its server connections asked for on another), or a table
 * changed under a prepared statement (a newer version's migration). What failed so is tried again,
 * unnamed.
 */
export interface StatementNames {
  /** `text` with `params`, named while names are used. */
  readonly statement: (text: string, params: ReadonlyArray<unknown>) => Sent
  /** Whether `cause` says names cannot be used here: if so, no statement is named from now on. */
  readonly refused: (cause: unknown) => boolean
}

const maxNamed = 64
const maxNamedParams = 64

/**
 * A value as PostgreSQL can keep it: its text type takes no NUL character (it refuses the whole
 * statement), which a tool's output or a model's answer may hold; it becomes U+FFFD, the
 * replacement character, as a byte that is no text does when decoded.
 */
const storable = (value: unknown): unknown =>
  typeof value === "string" && value.includes("\u0000") ? value.replaceAll("\u0000", "\uFFFD") : value

const statementNames = (): StatementNames => {
  const names = new Map<string, string>()
  let naming = true
  return {
    statement: (text, params) => {
      const values = params.map(storable)
      if (!naming || values.length > maxNamedParams) return { text, values }
      let name = names.get(text)
      if (name === undefined) {
        if (names.size >= maxNamed) return { text, values }
        name = `foundry_${createHash("sha256").update(text).digest("hex").slice(0, 32)}`
        names.set(text, name)
      }
      return { name, text, values }
    },
    refused: (cause) => {
      const refused = isServerError(cause) && (
        // No such statement on this server connection, or one of that name already there.
        cause.code === "26000" || cause.code === "42P05" ||
        // The rows' shape changed under it: the routine says so in every language the server speaks.
        (cause.code === "0A000" && (cause.routine === "RevalidateCachedQuery" || cause.message.includes("cached plan must not change result type")))
      )
      if (refused) naming = false
      return refused
    }
  }
}

/**
 * A pool on `url` for the current scope, once a first statement has been answered within
 * `connectTimeout`, which also bounds every later wait for a connection (node-postgres waits
 * forever by default on a server that takes the connection and never answers).
 */
const openPool = (url: Redacted.Redacted | string, connectTimeout: Duration.DurationInput, options: Pg.PoolConfig) =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      const connectionString = typeof url === "string" ? url : Redacted.value(url)
      const within = Duration.toMillis(connectTimeout)
      const pool = new Pg.Pool({
        connectionString,
        connectionTimeoutMillis: within,
        types,
        // Seen in `pg_stat_activity` (one in the URL or `PGAPPNAME` wins).
        fallback_application_name: "foundry",
        // Probed after 10 s idle (the system's default is two hours): a connection a firewall or a
        // NAT dropped without a word is found out while idle, and kept open by the probes.
        keepAlive: true,
        keepAliveInitialDelayMillis: 10_000,
        // Watched from its start, and handed out once the server has told when its process started:
        // pg-pool waits for the promise the hook returns (its types say the hook returns nothing),
        // and fails the connection's first caller when it is refused.
        onConnect: (connection) => connection instanceof Pg.Client ? watchAnswers(connection, connectionString, within) : undefined,
        ...options
      })
      // An idle connection that breaks (a server restarting) is dropped by the pool, which says
      // so here; without a listener the process would stop on it.
      pool.on("error", () => {})
      return query(pool, plain("SELECT 1")).pipe(
        Effect.mapError((cause) => new SqlError({ cause, message: "PgClient: Failed to connect" })),
        Effect.timeoutFail({
          duration: connectTimeout,
          onTimeout: () => new SqlError({ cause: new Error("Connection timed out"), message: "PgClient: Connection timed out" })
        }),
        Effect.as(pool),
        Effect.tapError(() => Effect.promise(() => pool.end()))
      )
    }),
    (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
  )

/**
 * The pools, and `PgClient` (as `SqlClient` too) over the store's pool with the store's name
 * transforms: names in camelCase in code, snake_case in the database; `maxConnections` open at
 * most, all told.
 */
export const clientLayer = (
  url: Redacted.Redacted | string,
  connectTimeout: Duration.DurationInput = defaultConnectTimeout,
  maxConnections: number = defaultStoreMaxConnections
) => {
  const pools = Layer.scoped(
    PgPools,
    Effect.all({
      // Besides it: the writer, and the connection `PgClient` listens on (opened once a channel is listened to).
      pool: openPool(url, connectTimeout, { max: maxConnections - 2 }),
      // One: the group commit writes one batch at a time. Kept a minute while idle (not the
      // pool's 10 s), so that writes a few seconds apart do not each connect again.
      writer: openPool(url, connectTimeout, { max: 1, idleTimeoutMillis: 60_000, pipeline: true }),
      names: Effect.sync(statementNames)
    })
  )
  const client = Layer.unwrapEffect(Effect.map(PgPools, ({ pool }) =>
    PgClient.layerFromPool({
      acquire: Effect.succeed(pool),
      transformQueryNames: Str.camelToSnake,
      transformResultNames: Str.snakeToCamel
    })))
  return Layer.provideMerge(client, pools)
}

/** A statement as node-postgres takes it: its text (`$1` placeholders), values, and name if it has one. */
export type Sent = Pg.QueryConfig<Array<unknown>>

/** A statement without values, sent as it is: `BEGIN`, `COMMIT`, a savepoint's. */
export const plain = (text: string): Sent => ({ text })

/**
 * A write transaction's start, at READ COMMITTED whatever the server's default: a unit's guards
 * read what committed before each of them, one after a lock wait included (a stricter level would
 * read as of the transaction's first statement).
 */
export const begin: Sent = plain("BEGIN ISOLATION LEVEL READ COMMITTED")

/**
 * One statement on `connection`: its rows, by column name as the database spells them.
 * Interrupted, it is not waited for: the connection answers it before the next statement queued
 * on it.
 */
export const query = (connection: Pg.Pool | Pg.PoolClient, statement: Sent): Effect.Effect<ReadonlyArray<Row>, Error> =>
  Effect.async((resume) => {
    send(connection, statement, (error, result) => resume(error ? Effect.fail(error) : Effect.succeed(result.rows)))
  })

/**
 * Whether the server said so: an error it answered with, after which the connection goes on
 * (unlike a connection that broke, or the client's own error, which may have left the server's
 * answers unread).
 */
export const isServerError = (cause: unknown): cause is Pg.DatabaseError => cause instanceof Pg.DatabaseError

/** A connection taken from the pool, and what broke it while it was held. */
interface Held {
  readonly connection: Pg.PoolClient
  readonly onError: (cause: Error) => void
  broken: Error | undefined
}

/** A connection of `pool`, held to `use`; `failed` is told when none could be had. */
const hold = (pool: Pg.Pool, failed: (error: Error) => void, use: (held: Held) => void) =>
  pool.connect((error, connection) => {
    if (error !== undefined || connection === undefined) return failed(error ?? new Error("the pool gave no connection"))
    const held: Held = {
      connection,
      broken: undefined,
      onError: (cause) => {
        held.broken = cause
      }
    }
    // Without a listener, a connection that breaks while held would stop the process.
    connection.on("error", held.onError)
    use(held)
  })

/** Back to the pool, or closed when it broke or could not be rolled back (it would hand its state on). */
const letGo = (held: Held) => {
  held.connection.off("error", held.onError)
  held.connection.release(held.broken ?? false)
}

/**
 * One statement on a connection of the pool's, which goes back to it once the statement is
 * answered, also when the reader was interrupted before (back earlier, the next reader would wait
 * behind it). Unlike `Pool.query`, which closes a connection whose statement the server refused,
 * it keeps one that only the server's answer failed, as `@effect/sql-pg` did.
 */
export const read = (pool: Pg.Pool, statement: Sent): Effect.Effect<ReadonlyArray<Row>, Error> =>
  Effect.async((resume) => {
    hold(pool, (error) => resume(Effect.fail(error)), (held) => {
      send(held.connection, statement, (failed, result) => {
        if (failed !== undefined && !isServerError(failed)) held.broken ??= failed
        letGo(held)
        resume(failed ? Effect.fail(failed) : Effect.succeed(result.rows))
      })
    })
  })

const checkOut = (pool: Pg.Pool): Effect.Effect<Held, Error> =>
  Effect.async((resume) => hold(pool, (error) => resume(Effect.fail(error)), (held) => resume(Effect.succeed(held))))

/**
 * `use` with a connection of its own, which goes back to the pool after; on a failure or an
 * interruption, what it began is rolled back first (`ROLLBACK` outside a transaction only warns).
 */
export const withConnection = <A, E>(pool: Pg.Pool, use: (connection: Pg.PoolClient) => Effect.Effect<A, E>): Effect.Effect<A, E | Error> =>
  Effect.acquireUseRelease(
    checkOut(pool),
    (held) =>
      Effect.onError(use(held.connection), () =>
        query(held.connection, plain("ROLLBACK")).pipe(
          Effect.catchAll((cause) => Effect.sync(() => void (held.broken ??= cause)))
        )),
    (held) => Effect.sync(() => letGo(held))
  )

/** `body` in a transaction on a connection of its own: `BEGIN`, the body, `COMMIT`. */
export const transaction = <A, E>(pool: Pg.Pool, body: (connection: Pg.PoolClient) => Effect.Effect<A, E>): Effect.Effect<A, E | Error> =>
  withConnection(pool, (connection) =>
    query(connection, begin).pipe(
      Effect.zipRight(body(connection)),
      Effect.zipLeft(query(connection, plain("COMMIT")))
    ))

/** What the server answered to one statement of a flight. */
export type Answer = Either.Either<Pg.QueryResult, Error>

/**
 * `statements` sent together on `connection`, a pipelined one, in one write to its socket: each
 * one's answer, in order, once all are answered. The server runs them in order; inside a
 * transaction, those after one that failed fail too (the transaction is aborted), and a `COMMIT`
 * among them rolls it back.
 */
export const flight = (connection: Pg.PoolClient, statements: ReadonlyArray<Sent>): Effect.Effect<ReadonlyArray<Answer>> =>
  Effect.async((resume) => {
    const answers: Array<Answer> = []
    let waiting = statements.length
    if (waiting === 0) return resume(Effect.succeed(answers))
    // node-postgres writes each statement's messages with a write of its own; held until all are
    // written, they go in one.
    const socket = connection.connection.stream
    socket.cork()
    try {
      for (const [index, statement] of statements.entries()) {
        send(connection, statement, (error, result) => {
          answers[index] = error ? Either.left(error) : Either.right(result)
          if (--waiting === 0) resume(Effect.succeed(answers))
        })
      }
    } finally {
      socket.uncork()
    }
  })
