/**
 * `order-lookup-http`: the `order-lookup` workload driven through the real HTTP server, as a client
 * would drive it. 50 clients, each in a loop: `POST /api/runs`, then follow
 * `GET /api/runs/:runId/events` (server-sent events) until the run's end event. The server is
 * `serverLayer` built in this process, so server and clients share one process and its CPU.
 */
import { truncateSync } from "node:fs"
import { Effect, Schema } from "effect"
import { runEndTypes } from "../../src/events/FoundryEvent.js"
import { RunCreated } from "../../src/transports/http/api/RunsGroup.js"
import { followEvents, loadClient, postJson } from "../support/httpClient.js"
import { orderLookupProject } from "../support/project.js"
import { progress, startServer } from "../support/runtime.js"
import { collectGarbage, cpuMsSince, lineCount, mb, percentile, round, sampleRss, sqlPerRun } from "../support/stats.js"

const runs = 1000
const clients = 50
const warmUp = 100

const decodeRunCreated = Schema.decodeUnknown(Schema.parseJson(RunCreated))

export const orderLookupHttp = Effect.gen(function*() {
  const project = yield* orderLookupProject(clients)
  const { sideEffects } = project
  const server = yield* startServer(project.root, project)
  // At most one connection per client: a client's POST and its event stream follow each other.
  const client = yield* loadClient(clients)
  const rssLoaded = process.memoryUsage.rss()
  const request = (i: number) => ({ agent: "orders", instance: `customer-${i % 100}`, message: `Where is order 42? (#${i})` })

  /** One client's turn: submit over HTTP, then read the run's events until it ends. */
  const timedRun = (i: number) =>
    Effect.gen(function*() {
      const started = performance.now()
      const response = yield* postJson(client, `${server.url}/api/runs`, request(i))
      if (response.status !== 202) return yield* Effect.fail(new Error(`POST /api/runs: ${response.status} ${response.text}`))
      const created = yield* decodeRunCreated(response.text)
      const stream = yield* followEvents(client, `${server.url}/api/runs/${created.runId}/events`, runEndTypes)
      if (stream.endType === undefined) return yield* Effect.fail(new Error(`run ${created.runId}: its event stream ended before the run did`))
      return { runId: created.runId, ms: stream.endedAt - started, endType: stream.endType, frames: stream.frames }
    })
  // `clients` requests at a time: each fiber in `forEach` plays one client that starts its next
  // run as soon as its last one has ended.
  const batch = (count: number) =>
    Effect.forEach(Array.from({ length: count }, (_, i) => i), timedRun, { concurrency: clients })

  yield* progress(`order-lookup-http: warming up (${warmUp} runs)`)
  yield* batch(warmUp)
  truncateSync(sideEffects, 0)
  client.sockets.clear()
  collectGarbage()

  yield* progress(`order-lookup-http: ${runs} runs over HTTP, ${clients} clients`)
  const rss = sampleRss()
  const statsBefore = yield* server.database.stats
  const cpu = process.cpuUsage()
  const started = performance.now()
  const measured = yield* batch(runs)
  const elapsedMs = performance.now() - started
  const cpuMs = cpuMsSince(cpu)
  const statsAfter = yield* server.database.stats
  const peakRss = rss.stop()
  const lines = lineCount(sideEffects)

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
    peakRssMb: mb(peakRss),
    rssBeforeRunsMb: mb(rssLoaded),
    target: { runsPerSecond: ">= 500" },
    meetsTarget: { runsPerSecond: runsPerSecond >= 500 }
  }
}).pipe(Effect.scoped)
