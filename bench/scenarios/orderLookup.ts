/**
 * `order-lookup`, DESIGN section 9's reference workload: one user message per conversation, model
 * turn 1 calls `lookup({ id: "42" })` (which appends a line to a file), model turn 2 answers.
 * Scripted model (zero latency), SQLite file store, events recorded, 500 conversations with at
 * most 50 in flight; then 100 runs one at a time, and 3,000 more conversations (the same load, once
 * the process has run long enough for the JIT to have compiled its hot code).
 *
 * `order-lookup-pg`: the same on a fresh PostgreSQL database (`support/postgres.ts`), the store a
 * cluster's runners and a deployment share. DESIGN's targets are the SQLite store's; this one's
 * figures are read by commit, against themselves.
 */
import { randomBytes } from "node:crypto"
import { truncateSync } from "node:fs"
import { Effect } from "effect"
import { operationsSoFar } from "../support/effectOperations.js"
import { freshDatabase } from "../support/postgres.js"
import { orderLookupProject, orderLookupProjectOn } from "../support/project.js"
import { progress, startRuntime, timedRun } from "../support/runtime.js"
import { collectGarbage, cpuReading, lineCount, mb, percentile, round, sampleRss, sqlPerRun } from "../support/stats.js"

const conversations = 500
const inFlight = 50
const warmUp = 100
const serialRuns = 100
const sustainedConversations = 3000
const turnsPerRun = 2

const orderLookupOn = (store: "sqlite" | "postgres") => Effect.gen(function*() {
  // A store other processes may share is given the secret key every one of them is (as a deployment
  // sets it); without it the runtime says so on stdout, which is the benchmarks' JSON.
  if (store === "postgres") process.env["FOUNDRY_SECRET_KEY"] ??= randomBytes(32).toString("hex")
  const project = store === "sqlite" ? yield* orderLookupProject(inFlight) : yield* orderLookupProjectOn(inFlight, yield* freshDatabase)
  const { sideEffects } = project
  const runtime = yield* startRuntime(project.root, project)
  const rssLoaded = process.memoryUsage.rss()
  const request = (i: number) => ({ agent: "orders", instance: `customer-${i % 100}`, message: `Where is order 42? (#${i})` })
  /** `count` conversations with at most `concurrency` in flight: each run's latency, and the batch's wall and CPU time. */
  const batch = (count: number, concurrency: number) =>
    Effect.gen(function*() {
      const cpu = cpuReading()
      const started = performance.now()
      const runs = yield* Effect.forEach(Array.from({ length: count }, (_, i) => i), (i) => timedRun(runtime, request(i)), { concurrency })
      return { runs, elapsedMs: performance.now() - started, ...cpu(count) }
    })

  yield* progress(`order-lookup: warming up (${warmUp} runs)`)
  yield* batch(warmUp, inFlight)
  truncateSync(sideEffects, 0)
  collectGarbage()

  yield* progress(`order-lookup: ${conversations} conversations, ${inFlight} in flight`)
  const rss = sampleRss()
  const statsBefore = yield* runtime.database.stats
  const { byThread, cpuMs, elapsedMs, gc, runs } = yield* batch(conversations, inFlight)
  const statsAfter = yield* runtime.database.stats
  const peakRss = rss.stop()
  const lines = lineCount(sideEffects)
  const completed = yield* runtime.store.listRuns({ status: "completed", limit: 100_000 })
  const measured = new Set(runs.map((r) => r.runId))
  const completedMeasured = completed.filter((r) => measured.has(r.id)).length
  const events = yield* runtime.events.list({ runId: runs[0]?.runId, limit: 1000 })

  // Unloaded: one run at a time, so a run's latency is the orchestration cost of its turns alone.
  yield* progress(`order-lookup: ${serialRuns} runs one at a time`)
  const serialBefore = yield* runtime.database.stats
  const serial = (yield* batch(serialRuns, 1)).runs
  const oneAtATime = sqlPerRun(serialBefore, yield* runtime.database.stats, serialRuns)

  yield* progress(`order-lookup: ${sustainedConversations} more conversations, ${inFlight} in flight`)
  collectGarbage()
  const operationsBefore = yield* operationsSoFar
  const sustained = yield* batch(sustainedConversations, inFlight)
  const operations = (yield* operationsSoFar) - operationsBefore

  const latencies = runs.map((r) => r.ms)
  const serialPerTurn = serial.map((r) => r.ms / turnsPerRun)
  const runsPerSecond = conversations / (elapsedMs / 1000)
  const overheadP50 = percentile(serialPerTurn, 50)
  const targets = {
    target: { runsPerSecond: ">= 1000", cpuMsPerRun: "<= 1", overheadPerTurnP50Ms: "< 0.5", writeTransactionsOneAtATime: "<= 6" },
    meetsTarget: {
      runsPerSecond: runsPerSecond >= 1000,
      cpuMsPerRun: cpuMs / conversations <= 1,
      overheadPerTurn: overheadP50 < 0.5,
      writeTransactionsOneAtATime: oneAtATime.writeTransactions <= 6,
      // The same load once V8 has compiled the hot code: what a process that has been serving for a while does.
      sustainedRunsPerSecond: sustainedConversations / (sustained.elapsedMs / 1000) >= 1000,
      sustainedCpuMsPerRun: sustained.cpuMs / sustainedConversations <= 1
    }
  }
  return {
    scenario: store === "sqlite" ? "order-lookup" : "order-lookup-pg",
    conversations,
    inFlight,
    turnsPerRun,
    runsCompleted: completedMeasured,
    toolFileLines: lines,
    toolFileLinesOk: lines === conversations,
    eventsPerRun: events.length,
    sqlPerRun: {
      ...sqlPerRun(statsBefore, statsAfter, conversations),
      statementsOneAtATime: oneAtATime.statements,
      writeTransactionsOneAtATime: oneAtATime.writeTransactions,
      commitMsOneAtATime: oneAtATime.commitMs
    },
    elapsedMs: round(elapsedMs, 0),
    runsPerSecond: round(runsPerSecond, 1),
    latencyMs: { p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)) },
    cpuMsPerRun: round(cpuMs / conversations, 3),
    // The same CPU by thread: the main thread runs the runs; the others are mostly V8 compiling the
    // hot code and collecting garbage beside it.
    cpuMsPerRunByThread: byThread,
    gcPerRun: gc,
    peakRssMb: mb(peakRss),
    rssBeforeRunsMb: mb(rssLoaded),
    overheadPerTurnMs: {
      p50: round(overheadP50, 3),
      p99: round(percentile(serialPerTurn, 99), 3),
      loadedP50: round(percentile(latencies, 50) / turnsPerRun, 3),
      cpuPerTurn: round(cpuMs / conversations / turnsPerRun, 3),
      // The part of it spent waiting for commits to be synced (a run's write transactions one at a time).
      waitingForCommits: oneAtATime.commitMs === null ? null : round(oneAtATime.commitMs / turnsPerRun, 3)
    },
    sustained: {
      conversations: sustainedConversations,
      runsPerSecond: round(sustainedConversations / (sustained.elapsedMs / 1000), 1),
      cpuMsPerRun: round(sustained.cpuMs / sustainedConversations, 3),
      cpuMsPerRunByThread: sustained.byThread,
      gcPerRun: sustained.gc,
      // The benchmark's own client included: it submits each run and waits for its end.
      effectOperationsPerRun: round(operations / sustainedConversations, 1)
    },
    ...(store === "sqlite" ? targets : {})
  }
}).pipe(Effect.scoped)

export const orderLookup = orderLookupOn("sqlite")

export const orderLookupPg = orderLookupOn("postgres")
