import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { durableProject, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

interface Span {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly attributes: ReadonlyArray<{ key: string; value: { stringValue?: string; intValue?: string } }>
}

/** A local OTLP/HTTP receiver that keeps every span it is sent. */
const collector = Effect.acquireRelease(
  Effect.async<{ readonly url: string; readonly spans: Array<Span>; readonly close: () => void }>((resume) => {
    const spans: Array<Span> = []
    const server = createServer((request, response) => {
      let body = ""
      request.on("data", (chunk: Buffer) => (body += chunk.toString()))
      request.on("end", () => {
        if (request.url === "/v1/traces") {
          const parsed = JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<Span> }> }> }
          for (const resource of parsed.resourceSpans) for (const scope of resource.scopeSpans) spans.push(...scope.spans)
        }
        response.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      resume(Effect.succeed({ url: `http://127.0.0.1:${port}`, spans, close: () => server.close() }))
    })
  }),
  (c) => Effect.sync(c.close)
)

describe("OpenTelemetry export", () => {
  it.scopedLive("sends a run as a trace, its steps as spans, with GenAI attributes on model turns", () =>
    Effect.gen(function*() {
      const otel = yield* collector
      process.env.OTEL_EXPORTER_OTLP_ENDPOINT = otel.url
      yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT))
      const root = yield* tempProject(durableProject(join(tmpdir(), `foundry-otel-${randomUUID()}.log`)))
      const server = yield* startServer(root, { model: plannedModel })
      const created = yield* http(`${server.url}/api/runs`, {
        body: { agent: "worker", message: plan({ calls: [{ name: "record", arguments: { line: "traced" } }] }) }
      })
      const { runId } = created.json as { runId: string }
      yield* waitForRun(server.url, runId)
      for (let i = 0; i < 100 && otel.spans.length < 4; i++) yield* Effect.sleep("50 millis")
      const run = otel.spans.find((s) => s.name === "run worker")
      expect(run).toBeDefined()
      expect(run?.parentSpanId).toBeUndefined()
      const turns = otel.spans.filter((s) => s.name.startsWith("chat "))
      expect(turns).toHaveLength(2)
      for (const turn of turns) {
        expect(turn.traceId).toBe(run?.traceId)
        expect(turn.parentSpanId).toBe(run?.spanId)
        const keys = turn.attributes.map((a) => a.key)
        expect(keys).toEqual(expect.arrayContaining(["gen_ai.operation.name", "gen_ai.request.model", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"]))
      }
      const tool = otel.spans.find((s) => s.name === "execute_tool record")
      expect(tool?.parentSpanId).toBe(run?.spanId)
      expect(tool?.attributes).toEqual(expect.arrayContaining([{ key: "gen_ai.tool.name", value: { stringValue: "record" } }]))
    }))
})
