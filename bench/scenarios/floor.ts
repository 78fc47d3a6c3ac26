/**
 * `floor`: what the reference workload's durable work alone costs on this machine, run alone. One
 * run of order-lookup is executed by the runtime with every SQLite statement it executes recorded
 * (text, parameters, order, so its transactions and their syncs too); then the recording is played
 * back on a connection of the bare library, opened as the store opens its own (WAL,
 * `synchronous = FULL`, temporary store in memory), one run at a time, each with ids of its own.
 * No runtime can do the same steps with the same durability faster on this disk: DESIGN section
 * 9's overhead per model turn is measured against it (`order-lookup`'s `overheadPerTurnMs`).
 */
import Sqlite from "better-sqlite3"
import { Effect } from "effect"
import { orderLookupProject } from "../support/project.js"
import { progress, startRuntime } from "../support/runtime.js"
import { cpuMsSince, percentile, round } from "../support/stats.js"

const warmUp = 30
const replays = 300
const turnsPerRun = 2

/** One statement as a run executed it, on the database file named `file`. */
interface Executed {
  readonly file: string
  readonly sql: string
  readonly reads: boolean
  readonly params: ReadonlyArray<unknown>
}

/**
 * Records what every prepared statement executes while `recording` is on: better-sqlite3's own
 * statement methods, wrapped in this process only (each scenario has a process of its own).
 */
const statementRecorder = () => {
  const probe = new Sqlite(":memory:")
  const prototype: unknown = Object.getPrototypeOf(probe.prepare("SELECT 1"))
  probe.close()
  const executed: Array<Executed> = []
  let recording = false
  if (typeof prototype !== "object" || prototype === null) throw new Error("better-sqlite3's statements have no prototype to record")
  for (const method of ["run", "all", "get"] as const) {
    const original: unknown = Reflect.get(prototype, method)
    if (typeof original !== "function") throw new Error(`better-sqlite3's statements have no ${method} method`)
    Reflect.set(prototype, method, function(this: Sqlite.Statement, ...params: Array<unknown>) {
      if (recording) executed.push({ file: this.database.name, sql: this.source, reads: method !== "run", params })
      return Reflect.apply(original, this, params)
    })
  }
  return {
    record: <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.acquireUseRelease(
        Effect.sync(() => {
          executed.length = 0
          recording = true
        }),
        () => effect,
        () => Effect.sync(() => (recording = false))
      ),
    executed: (): ReadonlyArray<Executed> => [...executed]
  }
}

/** Ids in parameters (`run_…`, `cnv_…`, `evt_…`) made new for replay `n`, so that every replay inserts rows of its own. */
const renamed = (params: ReadonlyArray<unknown>, n: number): ReadonlyArray<unknown> =>
  params.map((param) => typeof param === "string" && /^[a-z]+_[A-Za-z0-9_-]+$/.test(param) ? `${param}~${n}` : param)

/** The statements of one run of order-lookup executed alone (after a few), and what the store counted of it. */
const recordedRun = (recorder: ReturnType<typeof statementRecorder>, project: Effect.Effect.Success<ReturnType<typeof orderLookupProject>>) =>
  Effect.gen(function*() {
    const runtime = yield* startRuntime(project.root, project)
    const request = (i: number) => ({ agent: "orders", instance: "customer-1", message: `Where is order 42? (#${i})` })
    const runOnce = (i: number) => Effect.flatMap(runtime.dispatcher.submit(request(i)), (run) => runtime.dispatcher.await(run.id))
    yield* progress(`floor: ${warmUp} runs, then one recorded`)
    for (let i = 0; i < warmUp; i++) yield* runOnce(i)
    // A settled moment: nothing else of the runtime writes between the submission and the end.
    yield* Effect.sleep("200 millis")
    const before = yield* runtime.database.stats
    yield* recorder.record(runOnce(warmUp))
    const after = yield* runtime.database.stats
    // The store's statements only: the store's channel (a file of its own beside it) is read by a
    // timer of its own, twenty times a second, whatever the run does.
    return {
      storeFile: project.storeFile,
      executed: recorder.executed().filter((statement) => statement.file === project.storeFile),
      statements: after.statements - before.statements,
      writeTransactions: after.writeTransactions - before.writeTransactions
    }
  }).pipe(Effect.scoped)

export const floor = Effect.gen(function*() {
  const recorder = statementRecorder()
  // The runtime closed again (its log checkpointed into the file) before the file is played on.
  const { executed, statements, storeFile, writeTransactions } = yield* recordedRun(recorder, yield* orderLookupProject(1))
  yield* progress(`floor: the run's ${executed.length} statements played back ${replays} times on the bare library`)
  // Played on the store the runtime left (its schema, indexes and rows).
  const db = new Sqlite(storeFile)
  const times: Array<number> = []
  let cpuMs = 0
  let commitMs = 0
  try {
    db.pragma("journal_mode = WAL")
    db.pragma("synchronous = FULL")
    db.pragma("temp_store = MEMORY")
    const prepared = new Map<string, Sqlite.Statement>()
    const statement = (sql: string) => {
      const found = prepared.get(sql)
      if (found !== undefined) return found
      const made = db.prepare(sql)
      prepared.set(sql, made)
      return made
    }
    const replay = (n: number) => {
      for (const { params, reads, sql } of executed) {
        const prepared = statement(sql)
        const values = renamed(params, n)
        if (reads && prepared.reader) {
          prepared.all(...values)
        } else if (sql === "COMMIT") {
          const started = performance.now()
          prepared.run(...values)
          commitMs += performance.now() - started
        } else {
          prepared.run(...values)
        }
      }
    }
    for (let n = 0; n < warmUp; n++) replay(n)
    commitMs = 0
    for (let n = warmUp; n < warmUp + replays; n++) {
      const cpu = process.cpuUsage()
      const started = performance.now()
      replay(n)
      times.push(performance.now() - started)
      cpuMs += cpuMsSince(cpu)
    }
  } finally {
    db.close()
  }
  const perTurnP50 = percentile(times, 50) / turnsPerRun
  return {
    scenario: "floor",
    statementsPerRun: executed.length,
    // As the store counts them (its own BEGIN, COMMIT and savepoints aside).
    storeStatementsPerRun: statements,
    writeTransactionsPerRun: writeTransactions,
    runMs: { p50: round(percentile(times, 50), 3), p90: round(percentile(times, 90), 3) },
    cpuMsPerRun: round(cpuMs / replays, 3),
    // Waiting for its `COMMIT`s (read and write transactions): as `order-lookup`'s `commitMsOneAtATime`.
    commitMsPerRun: round(commitMs / replays, 3),
    perTurnMs: { p50: round(perTurnP50, 3) },
    // The overhead a turn may have above this floor and still meet DESIGN's target.
    target: { overheadPerTurnP50Ms: "< 0.5" },
    roomUnderTargetPerTurnMs: round(0.5 - perTurnP50, 3)
  }
}).pipe(Effect.scoped)
