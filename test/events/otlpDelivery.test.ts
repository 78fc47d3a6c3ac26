/**
 * How the OTLP export reaches a collector that is slow, refuses, or is configured the standard
 * OpenTelemetry way: against a real local HTTP collector, with the project's real server.
 */
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { runCli } from "../support/cli.js"
import { durableProject, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { http, startServer, type TestServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"
import { withEnv } from "../support/environment.js"
import { logLines } from "../support/logLines.js"
import { type Collector, collector, type Span } from "./otlpCollector.js"

const project = tempProject(durableProject(join(tmpdir(), `foundry-otel-${randomUUID()}.log`)))

/** Runs the worker once with one tool call (four spans: the run, two model turns, the tool call) and waits for it. */
const runOnce = (server: TestServer) =>
  Effect.gen(function*() {
    const created = yield* http(`${server.url}/api/runs`, {
      body: { agent: "worker", message: plan({ calls: [{ name: "record", arguments: { line: "traced" } }] }) }
    })
    const { runId } = created.json as { runId: string }
    expect(yield* waitForRun(server.url, runId)).toMatchObject({ status: "completed" })
    return runId
  })

const runSpanOf = (spans: ReadonlyArray<Span>, runId: string) =>
  spans.find((s) => s.name === "run worker" && s.attributes.some((a) => a.key === "foundry.run.id" && a.value.stringValue === runId))

const until = (condition: () => boolean, within = 10_000) =>
  Effect.gen(function*() {
    for (let waited = 0; waited < within && !condition(); waited += 50) yield* Effect.sleep("50 millis")
  })

/** The server in a scope of its own, to shut it down in the middle of a test. */
const startClosable = (root: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const server = yield* startServer(root, { model: plannedModel }).pipe(Scope.extend(scope))
    return { server, shutDown: Scope.close(scope, Exit.void) }
  })

const requestsTo = (otel: Collector) => otel.requests.length

describe("OTLP export delivery", () => {
  it.scopedLive("a collector that never answers holds a batch only for the timeout: a later run's spans arrive, and the log names the endpoint once", () =>
    Effect.gen(function*() {
      const lines = yield* logLines
      const otel = yield* collector((n) => n === 0 ? "hang" : 200)
      yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: otel.url, OTEL_EXPORTER_OTLP_TIMEOUT: "500" })
      const server = yield* startServer(yield* project, { model: plannedModel })
      yield* runOnce(server)
      yield* until(() => requestsTo(otel) === 1)
      const second = yield* runOnce(server)
      yield* until(() => runSpanOf(otel.spans(), second) !== undefined && lines.some((line) => line.includes("works again")))
      expect(runSpanOf(otel.spans(), second)).toBeDefined()
      expect(lines.filter((line) => line.includes("OpenTelemetry export"))).toEqual([
        expect.stringMatching(
          new RegExp(`^OpenTelemetry export to ${otel.url}/v1/traces failed: no answer within 500ms \\(OTEL_EXPORTER_OTLP_TIMEOUT\\); \\d+ spans are lost`)
        ),
        expect.stringMatching(/works again; \d+ spans were lost meanwhile/)
      ])
    }), { timeout: 30_000 })

  it.scopedLive("a collector that never answers holds shutdown only for the timeout, and the log says how many spans were not sent", () =>
    Effect.gen(function*() {
      const lines = yield* logLines
      const otel = yield* collector(() => "hang")
      yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: otel.url, OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: "1500" })
      const { server, shutDown } = yield* startClosable(yield* project)
      yield* runOnce(server)
      yield* until(() => requestsTo(otel) === 1)
      // Its spans wait behind the first batch, which waits for its answer.
      yield* runOnce(server)
      const started = Date.now()
      yield* shutDown
      expect(Date.now() - started).toBeLessThan(3_000)
      expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^OpenTelemetry export to ${otel.url}/v1/traces: \\d+ spans were not sent at shutdown`)))
    }), { timeout: 30_000 })

  it.scopedLive("a batch refused with 503 is sent again, and arrives", () =>
    Effect.gen(function*() {
      const otel = yield* collector((n) => n === 0 ? 503 : 200)
      yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: otel.url })
      const server = yield* startServer(yield* project, { model: plannedModel })
      const runId = yield* runOnce(server)
      yield* until(() => runSpanOf(otel.spans(), runId) !== undefined)
      expect(otel.requests.slice(0, 2).map((r) => r.answer)).toEqual([503, 200])
      expect(otel.requests[1]?.spans).toEqual(otel.requests[0]?.spans)
    }), { timeout: 30_000 })

  it.scopedLive("a batch refused with 400 is not sent again, and one warning names the status for all such batches", () =>
    Effect.gen(function*() {
      const lines = yield* logLines
      const otel = yield* collector(() => 400)
      yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: otel.url })
      const server = yield* startServer(yield* project, { model: plannedModel })
      yield* runOnce(server)
      yield* until(() => requestsTo(otel) === 1)
      yield* runOnce(server)
      yield* until(() => requestsTo(otel) >= 2)
      // A retry would come within a second.
      yield* Effect.sleep("1500 millis")
      const sent = otel.requests.flatMap((r) => r.spans.map((s) => s.spanId))
      expect(new Set(sent).size).toBe(sent.length)
      expect(lines.filter((line) => line.includes("OpenTelemetry export"))).toEqual([
        expect.stringMatching(new RegExp(`^OpenTelemetry export to ${otel.url}/v1/traces failed: HTTP 400: \\{\\}; \\d+ spans are lost`))
      ])
    }), { timeout: 30_000 })

  it.scopedLive("reads the standard variables: the traces endpoint as it is, headers (the traces ones first), the service name and resource attributes", () =>
    Effect.gen(function*() {
      const otel = yield* collector()
      yield* withEnv({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9/not-this-one",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${otel.url}/ingest/traces`,
        OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20secret-1,x-team=general",
        OTEL_EXPORTER_OTLP_TRACES_HEADERS: "x-team=traces",
        OTEL_SERVICE_NAME: "checkout",
        OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=staging,service.name=overridden"
      })
      const server = yield* startServer(yield* project, { model: plannedModel })
      const runId = yield* runOnce(server)
      yield* until(() => runSpanOf(otel.spans(), runId) !== undefined)
      const request = otel.requests.find((r) => runSpanOf(r.spans, runId) !== undefined)
      expect(request?.path).toBe("/ingest/traces")
      expect(request?.headers.authorization).toBe("Bearer secret-1")
      expect(request?.headers["x-team"]).toBe("traces")
      expect(request?.resources[0]).toMatchObject({ "service.name": "checkout", "deployment.environment": "staging" })
      expect(request?.resources[0]?.["service.version"]).toMatch(/^dev/)
    }), { timeout: 30_000 })

  it.scopedLive("the spans of a run that ended just before shutdown are sent as the server shuts down", () =>
    Effect.gen(function*() {
      const otel = yield* collector()
      yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: otel.url })
      const { server, shutDown } = yield* startClosable(yield* project)
      const runId = yield* runOnce(server)
      yield* shutDown
      expect(runSpanOf(otel.spans(), runId)).toBeDefined()
      expect(otel.spans()).toHaveLength(4)
    }), { timeout: 30_000 })

  it.scopedLive("foundry run exports its run's spans before it exits", () =>
    Effect.gen(function*() {
      const otel = yield* collector()
      yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: otel.url, OTEL_SERVICE_NAME: "one-off" })
      const root = yield* tempProject({
        "agents/greeter/agent.ts": `import { defineAgent, Scripted } from "foundry"
export default defineAgent({ description: "Greets", model: Scripted.make([{ text: "hello" }]) })
`
      })
      const result = yield* runCli(["run", "greeter", "hi", "--dir", root])
      expect(result.code).toBe(0)
      expect(otel.spans().map((s) => s.name).sort()).toEqual(["chat scripted:script", "run greeter"])
      expect(otel.requests[0]?.resources[0]?.["service.name"]).toBe("one-off")
    }), { timeout: 60_000 })

  it.scopedLive("spans beyond OTEL_BSP_MAX_QUEUE_SIZE while the collector stalls drop the oldest, with one warning", () =>
    Effect.gen(function*() {
      const lines = yield* logLines
      const otel = yield* collector((n) => n === 0 ? "hang" : 200)
      yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: otel.url, OTEL_EXPORTER_OTLP_TIMEOUT: "3000", OTEL_BSP_MAX_QUEUE_SIZE: "3" })
      const server = yield* startServer(yield* project, { model: plannedModel })
      yield* runOnce(server)
      yield* until(() => requestsTo(otel) === 1)
      // Each run makes four spans: of each, its first (a model turn) is dropped.
      const second = yield* runOnce(server)
      yield* until(() => requestsTo(otel) === 2)
      const sent = otel.requests[1]?.spans ?? []
      expect(sent.map((s) => s.name)).toEqual(["execute_tool record", "chat scripted:planned", "run worker"])
      expect(runSpanOf(sent, second)).toBeDefined()
      const warnings = lines.filter((line) => line.includes("falls behind"))
      expect(warnings).toEqual([expect.stringContaining(`OpenTelemetry export to ${otel.url}/v1/traces falls behind: 3 spans wait to be sent`)])
    }), { timeout: 30_000 })

  it.scopedLive("a 200 whose partial success rejected spans, or warns, is warned of once per kind, with the count and the collector's message", () =>
    Effect.gen(function*() {
      const lines = yield* logLines
      const otel = yield* collector((n) =>
        n < 2
          ? { status: 200, body: JSON.stringify({ partialSuccess: { rejectedSpans: "2", errorMessage: "attribute value too long" } }) }
          : { status: 200, body: JSON.stringify({ partialSuccess: { errorMessage: "the v1 field is deprecated" } }) }
      )
      yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: otel.url })
      const server = yield* startServer(yield* project, { model: plannedModel })
      for (let run = 1; run <= 4; run++) {
        yield* runOnce(server)
        yield* until(() => requestsTo(otel) >= run)
      }
      expect(requestsTo(otel)).toBe(4)
      expect(lines.filter((line) => line.includes("OpenTelemetry export"))).toEqual([
        expect.stringMatching(new RegExp(
          `^OpenTelemetry export to ${otel.url}/v1/traces: the collector took the request but rejected 2 of its \\d+ spans \\(partial success\\): attribute value too long; they are lost`
        )),
        expect.stringMatching(/the collector took all \d+ spans with a warning \(partial success\): the v1 field is deprecated\./)
      ])
    }), { timeout: 30_000 })

  it.scopedLive("OTEL_SDK_DISABLED=true turns the export off even with an endpoint set", () =>
    Effect.gen(function*() {
      const lines = yield* logLines
      const otel = yield* collector()
      yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: otel.url, OTEL_SDK_DISABLED: "true", OTEL_BSP_SCHEDULE_DELAY: "100" })
      const server = yield* startServer(yield* project, { model: plannedModel })
      yield* runOnce(server)
      yield* Effect.sleep("1500 millis")
      expect(requestsTo(otel)).toBe(0)
      expect(lines).toContainEqual(expect.stringContaining(`OTEL_SDK_DISABLED=true: no spans are exported (to ${otel.url}/v1/traces)`))
    }), { timeout: 30_000 })

  it.scopedLive("a Retry-After given as an HTTP date is waited out before the batch is sent again", () =>
    Effect.gen(function*() {
      // Dates have whole seconds: this one is 2 to 3 seconds away (the backoff alone is about 0.5).
      const otel = yield* collector((n) => n === 0 ? { status: 503, headers: { "retry-after": new Date(Date.now() + 3_000).toUTCString() } } : 200)
      yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: otel.url, OTEL_BSP_SCHEDULE_DELAY: "0" })
      const server = yield* startServer(yield* project, { model: plannedModel })
      const runId = yield* runOnce(server)
      yield* until(() => runSpanOf(otel.spans(), runId) !== undefined)
      const [refused, again] = otel.requests
      expect([refused?.answer, again?.answer]).toEqual([503, 200])
      expect((again?.at ?? 0) - (refused?.at ?? 0)).toBeGreaterThan(1_500)
    }), { timeout: 30_000 })

  it.scopedLive("OTEL_EXPORTER_OTLP_COMPRESSION=gzip sends bodies gzip-compressed; the traces variable wins", () =>
    Effect.gen(function*() {
      const root = yield* project
      const sentWith = (env: Readonly<Record<string, string>>) =>
        Effect.scoped(Effect.gen(function*() {
          const otel = yield* collector()
          yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: otel.url, ...env })
          const server = yield* startServer(root, { model: plannedModel })
          const runId = yield* runOnce(server)
          yield* until(() => runSpanOf(otel.spans(), runId) !== undefined)
          const request = otel.requests.find((r) => runSpanOf(r.spans, runId) !== undefined)
          expect(request).toBeDefined()
          return { encoding: request?.headers["content-encoding"], bytes: request?.bytes ?? 0, json: JSON.stringify(request?.spans).length }
        }))
      const gzipped = yield* sentWith({ OTEL_EXPORTER_OTLP_COMPRESSION: "gzip" })
      expect(gzipped.encoding).toBe("gzip")
      expect(gzipped.bytes).toBeLessThan(gzipped.json)
      const tracesGzip = yield* sentWith({ OTEL_EXPORTER_OTLP_COMPRESSION: "none", OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: "gzip" })
      expect(tracesGzip.encoding).toBe("gzip")
      const plain = yield* sentWith({ OTEL_EXPORTER_OTLP_COMPRESSION: "gzip", OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: "none" })
      expect(plain.encoding).toBeUndefined()
    }), { timeout: 60_000 })
})
