/**
 * `cluster`: the reference workload (a tool call, then the answer) on runner processes sharing one
 * PostgreSQL database: runs/s with 1, 2 and 3 runners, each fed over its own HTTP API, and the time
 * to take over a dead runner's conversations (one of three killed with SIGKILL while its runs are
 * in flight: how long until they run again on the survivors, and until all have completed).
 *
 * Each configuration gets a database of its own (shard locks are advisory locks, per database), on
 * the server at `FOUNDRY_BENCH_PG_URL` (`support/postgres.ts`).
 */
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Effect, Schema } from "effect"
import { freePort, requestJson, spawnFoundry, stopProcess, waitForOutput, type FoundryProcess } from "../support/foundryProcess.js"
import { freshDatabase, pgClient } from "../support/postgres.js"
import { delayedLookupModel, lookupAgent, lookupTool, modelDelayVariable, tempProject } from "../support/project.js"
import { progress } from "../support/runtime.js"
import { round } from "../support/stats.js"

const runsPerConfiguration = 1000
const submitConcurrency = 64
const takeoverRuns = 300
const takeoverDelayMs = 5000

const Created = Schema.Struct({ runId: Schema.String })

/** The project on `databaseUrl`, and the file its tool appends to. */
const project = (databaseUrl: string) =>
  Effect.gen(function*() {
    const dir = yield* tempProject({})
    const sideEffects = join(dir, "lookups.log")
    const root = yield* tempProject({
      "foundry.config.ts": `import { defineConfig } from "foundry"
export default defineConfig({ store: { postgres: ${JSON.stringify(databaseUrl)} }, concurrency: 500 })
`,
      "agents/orders/agent.ts": lookupAgent({ model: delayedLookupModel, imports: `import { Scripted } from "foundry"` }),
      "agents/orders/tools/lookup.tool.ts": lookupTool(sideEffects)
    })
    return root
  })

interface Runner {
  readonly process: FoundryProcess
  readonly url: string
}

const startRunners = (root: string, count: number, delayMs: number) =>
  Effect.forEach(Array.from({ length: count }), () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const runnerPort = yield* freePort
      const process = yield* Effect.acquireRelease(
        Effect.sync(() => spawnFoundry(["start", root, "--port", String(port), "--runner-port", String(runnerPort)], { [modelDelayVariable]: String(delayMs) })),
        (started) => stopProcess(started, "SIGKILL")
      )
      yield* waitForOutput(process, /listening on/)
      return { process, url: `http://127.0.0.1:${port}` } satisfies Runner
    }), { concurrency: "unbounded" })

/** Submits `count` runs round-robin over the runners; their ids. */
const submitRuns = (runners: ReadonlyArray<Runner>, count: number) =>
  Effect.forEach(
    Array.from({ length: count }, (_, i) => i),
    (i) =>
      requestJson(`${runners[i % runners.length]!.url}/api/runs`, { agent: "orders", message: `Where is order 42? (#${i})` }).pipe(
        Effect.flatMap(({ json }) => Schema.decodeUnknown(Created)(json)),
        Effect.map((created) => created.runId)
      ),
    { concurrency: submitConcurrency }
  )

/** Waits until no run is queued or running; the time it took from `from`. */
const untilAllEnded = (sql: PgClient.PgClient, from: number, timeoutMs = 120_000) =>
  Effect.gen(function*() {
    while (Date.now() - from < timeoutMs) {
      const open = yield* sql.unsafe<{ readonly n: string }>("SELECT COUNT(*) AS n FROM foundry_runs WHERE status IN ('queued', 'running')")
      if (Number(open[0]?.n ?? 1) === 0) return Date.now() - from
      yield* Effect.sleep("20 millis")
    }
    return yield* Effect.fail(new Error(`runs still open after ${timeoutMs} ms`))
  })

/** Runs/s of `runners` runner processes. */
const throughput = (runners: number) =>
  Effect.gen(function*() {
    const databaseUrl = yield* freshDatabase
    const root = yield* project(databaseUrl)
    yield* progress(`cluster: ${runners} runner${runners === 1 ? "" : "s"}`)
    const started = yield* startRunners(root, runners, 0)
    const sql = yield* pgClient(databaseUrl)
    // Warm up: shards acquired, code paths compiled.
    yield* submitRuns(started, 100)
    yield* untilAllEnded(sql, Date.now())
    const from = Date.now()
    yield* submitRuns(started, runsPerConfiguration)
    const ms = yield* untilAllEnded(sql, from)
    const completed = yield* sql.unsafe<{ readonly n: string }>("SELECT COUNT(*) AS n FROM foundry_runs WHERE status = 'completed'")
    return {
      runners,
      runs: runsPerConfiguration,
      seconds: round(ms / 1000),
      runsPerSecond: round(runsPerConfiguration / (ms / 1000), 1),
      completed: Number(completed[0]?.n ?? 0) - 100
    }
  }).pipe(Effect.scoped)

/** One of three runners killed with its runs in flight: how long until they run again, and end. */
const takeover = Effect.gen(function*() {
  const databaseUrl = yield* freshDatabase
  const root = yield* project(databaseUrl)
  yield* progress("cluster: takeover (3 runners, one killed with SIGKILL)")
  // Turn 2 waits, so that the runs are in flight at the kill.
  const runners = yield* startRunners(root, 3, takeoverDelayMs)
  const sql = yield* pgClient(databaseUrl)
  yield* submitRuns(runners, takeoverRuns)
  while (true) {
    const queued = yield* sql.unsafe<{ readonly n: string }>("SELECT COUNT(*) AS n FROM foundry_runs WHERE status = 'queued'")
    if (Number(queued[0]?.n ?? 1) === 0) break
    yield* Effect.sleep("20 millis")
  }
  const victim = runners[0]!
  const held = yield* sql.unsafe<{ readonly conversation_id: string }>(
    `SELECT conversation_id FROM foundry_conversation_leases WHERE owner LIKE '%/${victim.process.child.pid}/%' AND expires_at > ${Date.now()}`
  )
  yield* stopProcess(victim.process, "SIGKILL")
  const killedAt = Date.now()
  const conversations = held.map((row) => row.conversation_id)
  const allEndedMs = yield* untilAllEnded(sql, killedAt)
  // Taken over: the killed runner's runs resumed on the survivors (run.resumed, after the kill).
  const resumed = yield* sql.unsafe<{ readonly first: string | null; readonly last: string | null; readonly n: string }>(
    `SELECT MIN(time) AS first, MAX(time) AS last, COUNT(*) AS n FROM foundry_events WHERE type = 'run.resumed' AND time > ${killedAt}`
  )
  const after = (time: string | null | undefined) => time === null || time === undefined ? null : round((Number(time) - killedAt) / 1000)
  const statuses = yield* sql.unsafe<{ readonly status: string; readonly n: string }>("SELECT status, COUNT(*) AS n FROM foundry_runs GROUP BY status")
  return {
    runs: takeoverRuns,
    heldByKilledRunner: conversations.length,
    resumedOnSurvivors: Number(resumed[0]?.n ?? 0),
    killToFirstResumedSeconds: after(resumed[0]?.first),
    killToLastResumedSeconds: after(resumed[0]?.last),
    killToAllCompletedSeconds: round(allEndedMs / 1000),
    modelDelaySeconds: takeoverDelayMs / 1000,
    statuses: Object.fromEntries(statuses.map((row) => [row.status, Number(row.n)]))
  }
}).pipe(Effect.scoped)

export const cluster = Effect.gen(function*() {
  const one = yield* throughput(1)
  const two = yield* throughput(2)
  const three = yield* throughput(3)
  const failover = yield* takeover
  return {
    scenario: "cluster",
    store: "postgres",
    throughput: [one, two, three],
    takeover: failover,
    target: { killToAllCompletedSeconds: "< 15 (acceptance)" },
    meetsTarget: { takeover: failover.killToAllCompletedSeconds < 15 && failover.statuses["completed"] === takeoverRuns }
  }
})
