/**
 * Runs of the order-lookup workload over HTTP, as its clients make them: `POST /api/runs`, then
 * the run's event stream followed to its end. Made here by a scenario's own fibers, or by a
 * process of their own (`--http-clients`), so that the server's CPU can be told from theirs.
 */
import { spawn } from "node:child_process"
import { createInterface } from "node:readline"
import { Effect, Schema } from "effect"
import { runEndTypes } from "../../src/events/FoundryEvent.js"
import { RunCreated } from "../../src/transports/http/api/RunsGroup.js"
import { followEvents, type FollowedStream, type LoadClient, loadClient, postJson } from "./httpClient.js"
import { cpuReading, type GcFigures, round, type ThreadCpuPerRun } from "./stats.js"

const decodeRunCreated = Schema.decodeUnknown(Schema.parseJson(RunCreated))
const decodeDone = Schema.decodeUnknownEither(Schema.parseJson(Schema.Struct({ elapsedMs: Schema.Number })))

/** The `i`th run's request. */
const request = (i: number) => ({ agent: "orders", instance: `customer-${i % 100}`, message: `Where is order 42? (#${i})` })

/** A run's figures from its followed stream, `ms` since `started`; a stream that ended before the run fails it. */
const ended = (runId: string, started: number, stream: FollowedStream) =>
  stream.endType === undefined
    ? Effect.fail(new Error(`run ${runId}: its event stream ended before the run did`))
    : Effect.succeed({ runId, ms: stream.endedAt - started, endType: stream.endType, frames: stream.frames })

/** One run, submitted over HTTP and followed until it ends; `ms` from the POST to its end event. */
export const httpRun = (client: LoadClient, url: string, i: number) =>
  Effect.gen(function*() {
    const started = performance.now()
    const response = yield* postJson(client, `${url}/api/runs`, request(i))
    if (response.status !== 202) return yield* Effect.fail(new Error(`POST /api/runs: ${response.status} ${response.text}`))
    const created = yield* decodeRunCreated(response.text)
    return yield* ended(created.runId, started, yield* followEvents(client, `${url}/api/runs/${created.runId}/events`, runEndTypes))
  })

/**
 * One run in one request: `POST /api/runs` asking for the run's events as the answer
 * (`accept: text/event-stream`), read until its end event; `ms` from the POST to that event.
 */
export const streamedRun = (client: LoadClient, url: string, i: number) =>
  Effect.gen(function*() {
    const started = performance.now()
    const stream = yield* followEvents(client, `${url}/api/runs`, runEndTypes, request(i))
    return yield* ended(decodeURIComponent((stream.location ?? "").slice("/api/runs/".length)), started, stream)
  })

/** How a client makes a run: two requests (submit, then follow), or one (submitted with its events as the answer). */
export type RunRequests = "two" | "one"

/**
 * `count` runs, `clients` at a time, made with `requests`: each fiber plays one client that starts
 * its next run as soon as its last one ended.
 */
export const httpRuns = (client: LoadClient, url: string, count: number, clients: number, requests: RunRequests = "two") =>
  Effect.forEach(
    Array.from({ length: count }, (_, i) => i),
    (i) => requests === "two" ? httpRun(client, url, i) : streamedRun(client, url, i),
    { concurrency: clients }
  )

/**
 * The child's side (`--http-clients <url> <runs> <clients>`): says `start` on stdout once its
 * connections can be made, makes the runs, then prints how long they took.
 */
export const runClientsHere = (url: string, runs: number, clients: number) =>
  Effect.gen(function*() {
    const client = yield* loadClient(clients)
    process.stdout.write("start\n")
    const started = performance.now()
    yield* httpRuns(client, url, runs, clients)
    process.stdout.write(`${JSON.stringify({ elapsedMs: performance.now() - started })}\n`)
  }).pipe(Effect.scoped)

/** What a batch whose clients were in a process of their own measured: its rate, and the server's cost alone. */
export interface RunsFromAnotherProcess {
  readonly runsPerSecond: number
  readonly serverCpuMsPerRun: number
  /** The server's CPU by thread: its main thread's, beside the in-process batch's, says what the clients took of it there. */
  readonly serverCpuMsPerRunByThread: ThreadCpuPerRun | null
  readonly serverGcPerRun: GcFigures
}

/**
 * `runs` runs made by `clients` clients in a process of their own: the rate, and this process's
 * (the server's) CPU per run while they ran.
 */
export const runsFromAnotherProcess = (url: string, runs: number, clients: number) =>
  Effect.async<RunsFromAnotherProcess, Error>((resume) => {
    const child = spawn(process.execPath, [process.argv[1] ?? "", "--http-clients", url, String(runs), String(clients)], {
      stdio: ["ignore", "pipe", "inherit"]
    })
    let cpu: ReturnType<typeof cpuReading> | undefined
    createInterface({ input: child.stdout }).on("line", (line) => {
      if (line === "start") return void (cpu = cpuReading())
      if (cpu === undefined) return
      const server = cpu(runs)
      const done = decodeDone(line)
      resume(
        done._tag === "Left"
          ? Effect.fail(new Error(`the clients' process said ${line}`))
          : Effect.succeed({
            runsPerSecond: round(runs / (done.right.elapsedMs / 1000), 1),
            serverCpuMsPerRun: round(server.cpuMs / runs, 3),
            serverCpuMsPerRunByThread: server.byThread,
            serverGcPerRun: server.gc
          })
      )
    })
    child.on("exit", (code) => {
      if (code !== 0) resume(Effect.fail(new Error(`the clients' process exited with code ${code}`)))
    })
    return Effect.sync(() => child.kill())
  })
