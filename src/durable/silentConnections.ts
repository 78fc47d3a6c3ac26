/**
 * Connections of the store's pools that go silent. One whose far end went away without a word (the
 * server's host gone, a failover that moved its address, a network cut, a NAT that forgot it)
 * leaves what was sent on it waiting until TCP gives up, a quarter of an hour and more, and on the
 * writer's connection every write of the process behind it; a client timeout cannot tell that from
 * a statement that waits for a lock as long as another transaction holds it. So a connection on
 * which statements wait and no byte has moved for `after` is looked into, on a connection of its
 * own: while the server is at work on it, it is left to wait; otherwise it is closed, which fails
 * what waits on it as a connection that broke does (docs/decisions.md, "A store connection that
 * goes silent is looked into").
 */
import * as Pg from "pg"

/** What a connection waits for: statements sent and not answered, their texts (since it last had none), since when no byte moved. */
interface Waiting {
  count: number
  texts: Array<string>
  since: number
  lookingInto: boolean
}

const waitingOn = new WeakMap<Pg.Pool | Pg.Client, Waiting>()

/** `statement` sent on `connection`; `answered` is told the server's answer, or why none came. */
export const send = (
  connection: Pg.Pool | Pg.PoolClient,
  statement: Pg.QueryConfig<Array<unknown>>,
  answered: (error: Error | undefined, result: Pg.QueryResult) => void
): void => {
  const waiting = waitingOn.get(connection)
  if (waiting === undefined) return void connection.query(statement, answered)
  if (waiting.count++ === 0) {
    waiting.since = Date.now()
    waiting.texts = []
  }
  waiting.texts.push(statement.text)
  connection.query(statement, (error: Error | undefined, result: Pg.QueryResult) => {
    if (--waiting.count === 0) waiting.texts = []
    answered(error, result)
  })
}

/** The server's process id the connection was given as it opened (node-postgres keeps it; its types do not say so). */
const processIdOf = (connection: object): number | undefined =>
  "processID" in connection && typeof connection.processID === "number" ? connection.processID : undefined

/**
 * The socket under a connection's stream: TLS's own, whose counts move only with whole records
 * (16 kB), wraps it.
 */
const socketOf = (stream: object): object => "_parent" in stream && typeof stream._parent === "object" && stream._parent !== null ? stream._parent : stream

/** Bytes a socket has read so far. */
const bytesReadOf = (socket: object): number => "bytesRead" in socket && typeof socket.bytesRead === "number" ? socket.bytesRead : 0

/**
 * Bytes a socket has still to hand to the system: libuv's own queue, which goes down as a large
 * write goes out (Node's `writableLength` goes down only once the whole write has).
 */
const unsentOf = (socket: object): number =>
  "_handle" in socket && typeof socket._handle === "object" && socket._handle !== null && "writeQueueSize" in socket._handle &&
    typeof socket._handle.writeQueueSize === "number"
    ? socket._handle.writeQueueSize
    : 0

/**
 * The statement node-postgres waits on the server for on `connection`, whoever sent it (the
 * store's `PgClient` too, which sends without `send`): node-postgres keeps it without saying so in
 * its types. `undefined` when it waits for none, or where node-postgres keeps it otherwise; and for
 * a cursor (it has `read`), which between its reads waits for its reader, not for the server.
 */
const activeTextOf = (connection: object): string | undefined => {
  if (!("_getActiveQuery" in connection) || typeof connection._getActiveQuery !== "function") return undefined
  const active: unknown = connection._getActiveQuery()
  if (typeof active !== "object" || active === null || ("read" in active && typeof active.read === "function")) return undefined
  return "text" in active && typeof active.text === "string" ? active.text : undefined
}

/** What the server says of a connection looked into: at work on it, not, or nothing it can tell (then it is left to wait). */
type Verdict = "working" | "gone" | "unknown"

/**
 * Watches `connection` of a pool on `connectionString`: bytes moving either way (an answer coming
 * in, a statement still going out) are not silence, so a large answer over a slow network is left
 * to come. Done once the server has told when the connection's process started (watched too),
 * which the pool waits for before it hands the connection out: node-postgres takes a statement
 * only from a connection ready for one.
 */
export const watchAnswers = (connection: Pg.Client, connectionString: string, after: number): Promise<void> => {
  const waiting: Waiting = { count: 0, texts: [], since: 0, lookingInto: false }
  waitingOn.set(connection, waiting)
  // With its process id, what tells the connection's server process from another of that id (on a
  // server that took over after a failover) whatever it last ran; asked below.
  let started: string | undefined
  const stream = connection.connection.stream
  const socket = socketOf(stream)
  let read = bytesReadOf(socket)
  let unsent = unsentOf(socket)
  // A statement sent by another than `send` is timed from the first look that finds it.
  let sentElsewhere: string | undefined
  /**
   * The texts of the statements that wait on the connection (none if none does), once no byte has
   * moved for `after`, bytes that moved since the last look counted.
   */
  const silent = (): ReadonlyArray<string> => {
    const readNow = bytesReadOf(socket)
    const unsentNow = unsentOf(socket)
    const active = activeTextOf(connection)
    const elsewhere = waiting.count > 0 ? undefined : active
    if (readNow !== read || unsentNow < unsent || elsewhere !== sentElsewhere) waiting.since = Date.now()
    read = readNow
    unsent = unsentNow
    sentElsewhere = elsewhere
    if (Date.now() - waiting.since < after || (waiting.count === 0 && active === undefined)) return []
    // The server may still be at work on a statement sent before the store's (a `PgClient`
    // statement interrupted and its connection given back before its cancel took): its text too.
    return active === undefined || waiting.texts.includes(active) ? waiting.texts : [...waiting.texts, active]
  }
  const watch = setInterval(() => {
    if (waiting.lookingInto) return
    const texts = silent()
    if (texts.length === 0) return
    waiting.lookingInto = true
    lookInto(connectionString, { pid: processIdOf(connection), started }, texts, after, (verdict) => {
      waiting.lookingInto = false
      // Closed unless it answered while it was looked into.
      if (verdict !== "gone" || silent().length === 0) return void (waiting.since = Date.now())
      stream.destroy(
        new Error(
          `the store's server answered nothing on a connection for ${after / 1000} s and is not at work on it ` +
            "(pg_stat_activity): the connection was closed"
        )
      )
    })
  }, after / 2)
  // A watch keeps no process alive.
  watch.unref()
  connection.once("end", () => clearInterval(watch))
  // The server answering with an error cannot tell: the look falls back on the statements' texts.
  // A connection that broke, or whose server says nothing within `after`, is refused: the pool ends
  // it (its stream destroyed, the statement waiting) and fails whoever waited for it, within about
  // `connectTimeout` as when connecting (the pool's own timer stops once the connection opens).
  return new Promise<void>((told, refused) => {
    const giveUp = setTimeout(
      () => refused(new Error(`the store's server told nothing for ${after / 1000} s on a connection it had just opened`)),
      after
    )
    connection.query(startedSql, (error: Error | null, result: Pg.QueryResult) => {
      clearTimeout(giveUp)
      if (error && !(error instanceof Pg.DatabaseError)) return refused(error)
      const answer: unknown = error ? undefined : result.rows[0]?.["started"]
      if (typeof answer === "string") started = answer
      told()
    })
  })
}

/** A server process's start (`pg_stat_activity`'s), in whole microseconds since 1970. */
const backendStarted = "(extract(epoch FROM backend_start) * 1000000)::bigint"

/**
 * When the connection's server process started, in microseconds since 1970 as text: exact, and
 * read back the same whatever the connection's `DateStyle` and `TimeZone` (a timestamp's text in
 * some of them names its zone by an abbreviation the server reads back as another zone's, or not
 * at all).
 */
const startedSql = `SELECT ${backendStarted}::text AS started FROM pg_stat_activity WHERE pid = pg_backend_pid()`

/** A connection's server process: the id the server gave as the connection opened, and when it started, if told. */
interface ServerProcess {
  readonly pid: number | undefined
  readonly started: string | undefined
}

/**
 * What the server says of its `process` waiting on `texts`, asked on a connection of its own
 * within `within` ms. A server that cannot be reached in time says it is gone; one that answers
 * with an error (too many connections) cannot tell. Behind a pooler (PgBouncer and its kind),
 * which gives its clients process ids of its own, the look's own id is not its server process's
 * either: it cannot tell, and the connection is left to TCP and the pooler's own time limits.
 */
const lookInto = (connectionString: string, process: ServerProcess, texts: ReadonlyArray<string>, within: number, told: (verdict: Verdict) => void) => {
  const asking = new Pg.Client({ connectionString, connectionTimeoutMillis: within, fallback_application_name: "foundry" })
  let answered = false
  const answer = (verdict: Verdict) => {
    if (answered) return
    answered = true
    clearTimeout(giveUp)
    asking.end().catch(() => {})
    told(verdict)
  }
  const failed = (error: Error) => answer(error instanceof Pg.DatabaseError ? "unknown" : "gone")
  const giveUp = setTimeout(() => answer("gone"), within)
  asking.on("error", failed)
  asking.connect((error: Error | undefined) => {
    if (error) return failed(error)
    // node-postgres says no error with `null`.
    asking.query({ text: lookIntoSql, values: [process.pid ?? 0, texts, within, process.started ?? null] }, (error: Error | null, result: Pg.QueryResult) => {
      if (error) return failed(error)
      const row = result.rows[0]
      if (row?.["own"] !== processIdOf(asking) || process.pid === undefined) return answer("unknown")
      answer(row?.["working"] === true ? "working" : "gone")
    })
  })
}

/**
 * The look's own process id, and of the server's process `$1`, if it is the connection's (started
 * at `$4`; or, that not told, its last statement one of the texts `$2` it waits on, or their start
 * when the server cut it at `track_activity_query_size`: another process of that id, on the server
 * that took over after a failover, last ran something else), whether it is at work: running a
 * statement or waiting for a lock, not for the connection to send or take bytes; or having changed
 * state within `$3` ms (an answer on its way). Not at work, and not blocked sending an answer that
 * may still be taken, it is ended, so that what it holds is let go now, not when the server's own
 * TCP gives up (two hours by default): inside a transaction, the transaction rolled back and its
 * locks (the events' lock, which every process's writes take); known by when it started, its
 * session's advisory locks too (the cluster's shards), idle or not. Known by its last statement
 * alone, it is ended only inside a transaction: another process of that id may have last run the
 * same statement.
 */
const lookIntoSql = `SELECT pg_backend_pid() AS own, process.working, process.ended
FROM (SELECT 1) AS asked LEFT JOIN (
  SELECT working, CASE WHEN NOT working AND (known OR xact_start IS NOT NULL) AND wait_event IS DISTINCT FROM 'ClientWrite'
    THEN pg_terminate_backend(pid) END AS ended
  FROM (
    SELECT pid, xact_start, wait_event, $4::bigint IS NOT NULL AS known,
      (state = 'active' AND wait_event_type IS DISTINCT FROM 'Client') OR clock_timestamp() - state_change < $3 * interval '1 millisecond' AS working
    FROM pg_stat_activity
    WHERE pid = $1 AND CASE WHEN $4::bigint IS NULL THEN query = ANY($2::text[]) OR (
      octet_length(query) >= pg_size_bytes(current_setting('track_activity_query_size')) - 4 AND
      EXISTS (SELECT 1 FROM unnest($2::text[]) AS sent WHERE left(sent, length(query)) = query)
    ) ELSE ${backendStarted} = $4::bigint END
  ) AS candidate
) AS process ON true`
