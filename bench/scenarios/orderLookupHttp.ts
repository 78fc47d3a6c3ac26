/**
 * `order-lookup-http`: the `order-lookup` workload driven through the real HTTP server, as a client
 * would drive it. 50 clients, each in a loop: `POST /api/runs`, then follow
 * `GET /api/runs/:runId/events` (server-sent events) until the run's end event. The server is
 * `serverLayer` built in this process, so server and clients share one process and its CPU; a
 * second batch, made by clients in a process of their own, gives the server's CPU alone; then 4,000
 * runs more as the first batch made them, once V8 has compiled the server's hot code (it is still
 * compiling through the first thousands of runs of a process: docs/performance.md); then 2,000 runs
 * of one request each, `POST /api/runs` answered with the run's events, to read beside those.
 */
import { truncateSync } from "node:fs"
import { Effect } from "effect"
import { operationsSoFar } from "../support/effectOperations.js"
import { loadClient } from "../support/httpClient.js"
import { httpRuns, type RunRequests, runsFromAnotherProcess } from "../support/httpRuns.js"
import { orderLookupProject } from "../support/project.js"
import { progress, startServer } from "../support/runtime.js"
import { collectGarbage, cpuReading, lineCount, mb, percentile, round, sampleRss, sqlPerRun } from "../support/stats.js"

const runs = 1000
const clients = 50
const warmUp = 100
const sustainedRuns = 4000
const oneRequestRuns = 2000

export const orderLookupHttp = Effect.gen(function*() {
  const project = yield* orderLookupProject(clients)
  const { sideEffects } = project
  const server = yield* startServer(project.root, project)
  // At most one connection per client: a client's POST and its event stream follow each other.
  const client = yield* loadClient(clients)
  const rssLoaded = process.memoryUsage.rss()
  const batch = (count: number, requests: RunRequests = "two") => httpRuns(client, server.url, count, clients, requests)
  /** `count` runs: each run's figures, the batch's wall and CPU time, and its Effect operations a run (its clients' included). */
  const timedBatch = (count: number, requests: RunRequests = "two") =>
    Effect.gen(function*() {
      const cpu = cpuReading()
      const operations = yield* operationsSoFar
      const started = performance.now()
      const measured = yield* batch(count, requests)
      const elapsedMs = performance.now() - started
      const operationsPerRun = round(((yield* operationsSoFar) - operations) / count, 1)
      return { measured, elapsedMs, operationsPerRun, ...cpu(count) }
    })
  /** A later phase's figures: `count` runs timed as `timed`. */
  const phase = (count: number, timed: Effect.Effect.Success<ReturnType<typeof timedBatch>>) => ({
    runs: count,
    runsPerSecond: round(count / (timed.elapsedMs / 1000), 1),
    cpuMsPerRun: round(timed.cpuMs / count, 3),
    cpuMsPerRunByThread: timed.byThread,
    gcPerRun: timed.gc,
    effectOperationsPerRun: timed.operationsPerRun
  })

  yield* progress(`order-lookup-http: warming up (${warmUp} runs)`)
  yield* batch(warmUp)
  truncateSync(sideEffects, 0)
  client.sockets.clear()
  collectGarbage()

  yield* progress(`order-lookup-http: ${runs} runs over HTTP, ${clients} clients`)
  const rss = sampleRss()
  const statsBefore = yield* server.database.stats
  const { byThread, cpuMs, elapsedMs, gc, measured } = yield* timedBatch(runs)
  const statsAfter = yield* server.database.stats
  const peakRss = rss.stop()
  const lines = lineCount(sideEffects)

  yield* progress(`order-lookup-http: ${runs} runs over HTTP, ${clients} clients in a process of their own`)
  const operationsBefore = yield* operationsSoFar
  const apart = yield* runsFromAnotherProcess(server.url, runs, clients)
  // The server's alone: its clients were elsewhere.
  const serverOperations = (yield* operationsSoFar) - operationsBefore

  yield* progress(`order-lookup-http: ${sustainedRuns} runs more over HTTP, ${clients} clients`)
  collectGarbage()
  const sustained = yield* timedBatch(sustainedRuns)
  const sustainedRunsPerSecond = sustainedRuns / (sustained.elapsedMs / 1000)

  yield* progress(`order-lookup-http: ${oneRequestRuns} runs more, each in one request (its events as the answer), ${clients} clients`)
  collectGarbage()
  const oneRequest = yield* timedBatch(oneRequestRuns, "one")
  const oneRequestRunsPerSecond = oneRequestRuns / (oneRequest.elapsedMs / 1000)

  const latencies = measured.map((r) => r.ms)
  const frames = measured.map((r) => r.frames)
  const runsPerSecond = runs / (elapsedMs / 1000)
  return {
    scenario: "order-lookup-http",
    runs,
    clients,
    connectionsUsed: client.sockets.size,
    runsCompleted: measured.filter((r) => r.endType === "run.completed").length,
    toolFileLines: lines,
    toolFileLinesOk: lines === runs,
    eventsPerRun: { min: Math.min(...frames), max: Math.max(...frames) },
    sqlPerRun: sqlPerRun(statsBefore, statsAfter, runs),
    elapsedMs: round(elapsedMs, 0),
    runsPerSecond: round(runsPerSecond, 1),
    latencyMs: { p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)) },
    cpuMsPerRun: round(cpuMs / runs, 3),
    cpuMsPerRunByThread: byThread,
    gcPerRun: gc,
    clientsApart: { ...apart, serverEffectOperationsPerRun: round(serverOperations / runs, 1) },
    sustained: phase(sustainedRuns, sustained),
    oneRequest: {
      ...phase(oneRequestRuns, oneRequest),
      runsCompleted: oneRequest.measured.filter((r) => r.endType === "run.completed").length
    },
    peakRssMb: mb(peakRss),
    rssBeforeRunsMb: mb(rssLoaded),
    target: { runsPerSecond: ">= 500" },
    meetsTarget: {
      runsPerSecond: runsPerSecond >= 500,
      sustainedRunsPerSecond: sustainedRunsPerSecond >= 500,
      oneRequestRunsPerSecond: oneRequestRunsPerSecond >= 500
    }
  }
}).pipe(Effect.scoped)
