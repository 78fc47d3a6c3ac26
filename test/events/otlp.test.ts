import { tmpdir } from "node:os"
import { join } from "node:path"
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spanBuilder } from "../../src/events/OtlpExport.js"
import type { EventContent, FoundryEvent } from "../../src/events/FoundryEvent.js"
import { durableProject, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { http, pendingApproval, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"
import { withEnv } from "../support/environment.js"
import { collector } from "./otlpCollector.js"

/** Events of one run's span `spanId` (under `parentSpanId`), as its event log gives them, each at its time. */
const eventOf = (spanId: string, parentSpanId: string | null) => (content: EventContent, time: number): FoundryEvent => ({
  ...content,
  id: `evt_${time}`,
  seq: time,
  time,
  traceId: "0af7651916cd43dd8448eb211c80319c",
  spanId,
  parentSpanId,
  runId: "run_1",
  conversationId: "conv_1",
  instanceId: "default",
  agent: "worker",
  release: "dev"
})

describe("OpenTelemetry export", () => {
  it.scopedLive("sends a run as a trace, its steps as spans, with GenAI attributes on model turns", () =>
    Effect.gen(function*() {
      const otel = yield* collector()
      yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: otel.url })
      const root = yield* tempProject(durableProject(join(tmpdir(), `foundry-otel-${randomUUID()}.log`)))
      const server = yield* startServer(root, { model: plannedModel })
      const created = yield* http(`${server.url}/api/runs`, {
        body: { agent: "worker", message: plan({ calls: [{ name: "record", arguments: { line: "traced" } }] }) }
      })
      const { runId } = created.json as { runId: string }
      yield* waitForRun(server.url, runId)
      for (let i = 0; i < 100 && otel.spans().length < 4; i++) yield* Effect.sleep("50 millis")
      const run = otel.spans().find((s) => s.name === "run worker")
      expect(run).toBeDefined()
      expect(run?.parentSpanId).toBeUndefined()
      const turns = otel.spans().filter((s) => s.name.startsWith("chat "))
      expect(turns).toHaveLength(2)
      for (const turn of turns) {
        expect(turn.traceId).toBe(run?.traceId)
        expect(turn.parentSpanId).toBe(run?.spanId)
        const keys = turn.attributes.map((a) => a.key)
        expect(keys).toEqual(expect.arrayContaining(["gen_ai.operation.name", "gen_ai.request.model", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"]))
      }
      const tool = otel.spans().find((s) => s.name === "execute_tool record")
      expect(tool?.parentSpanId).toBe(run?.spanId)
      expect(tool?.attributes).toEqual(expect.arrayContaining([{ key: "gen_ai.tool.name", value: { stringValue: "record" } }]))
    }))

  it.scopedLive("a run that suspends for an approval and resumes is one run span, with the suspension as span events", () =>
    Effect.gen(function*() {
      const otel = yield* collector()
      yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: otel.url })
      const root = yield* tempProject(durableProject(join(tmpdir(), `foundry-otel-${randomUUID()}.log`)))
      const server = yield* startServer(root, { model: plannedModel })
      const created = yield* http(`${server.url}/api/runs`, {
        body: { agent: "worker", message: plan({ calls: [{ name: "transfer", arguments: { amount: 250 } }] }) }
      })
      const { runId } = created.json as { runId: string }
      const approvalId = yield* pendingApproval(server.url, runId)
      yield* http(`${server.url}/api/approvals/${approvalId}`, { body: { decision: "approve" } })
      expect(yield* waitForRun(server.url, runId)).toMatchObject({ status: "completed" })
      // Two turns, the tool call, the approval and the run.
      for (let i = 0; i < 100 && otel.spans().length < 5; i++) yield* Effect.sleep("50 millis")
      // Anything still to come would arrive within the exporter's one-second batch.
      yield* Effect.sleep("1200 millis")
      const ids = otel.spans().map((s) => `${s.traceId}/${s.spanId}`)
      expect(new Set(ids).size).toBe(ids.length)
      const runs = otel.spans().filter((s) => s.name === "run worker")
      expect(runs).toHaveLength(1)
      const run = runs[0]!
      expect(run.events?.map((e) => e.name)).toEqual(["run.suspended", "run.resumed"])
      expect(run.events?.[0]?.attributes).toEqual(expect.arrayContaining([
        { key: "foundry.suspended.reason", value: { stringValue: "approval" } },
        { key: "foundry.approval.id", value: { stringValue: approvalId } }
      ]))
      const [suspended, resumed] = (run.events ?? []).map((e) => BigInt(e.timeUnixNano))
      expect(BigInt(run.startTimeUnixNano) <= suspended!).toBe(true)
      expect(suspended! <= resumed!).toBe(true)
      expect(resumed! <= BigInt(run.endTimeUnixNano)).toBe(true)
      const approval = otel.spans().find((s) => s.name === "approval transfer")
      expect(approval?.traceId).toBe(run.traceId)
      expect(otel.spans().filter((s) => s.name.startsWith("chat "))).toHaveLength(2)
    }))

  it("a run resumed by a process that did not see it start is exported once, from its resumption", () => {
    const build = spanBuilder()
    const event = eventOf("b7ad6b7169203331", null)
    const resumed = { type: "run.resumed", data: { input: "go on", model: "demo" } } as const
    const suspended = { type: "run.suspended", data: { reason: "approval", approvalId: "apr_1", tool: "transfer" } } as const
    // A second suspension and resumption inside this process add events; only the end exports.
    expect(build(event(resumed, 1_000))).toEqual([])
    expect(build(event(suspended, 2_000))).toEqual([])
    expect(build(event(resumed, 3_000))).toEqual([])
    const spans = build(event({ type: "run.completed", data: { output: "done", turns: 1 } }, 4_000))
    expect(spans).toHaveLength(1)
    expect(spans[0]).toMatchObject({
      spanId: "b7ad6b7169203331",
      name: "run worker",
      startTimeUnixNano: "1000000000",
      endTimeUnixNano: "4000000000",
      events: [{ name: "run.suspended", timeUnixNano: "2000000000" }, { name: "run.resumed", timeUnixNano: "3000000000" }]
    })
    expect(build(event({ type: "run.completed", data: { output: "done", turns: 1 } }, 5_000))).toEqual([])
  })

  it("a model turn whose compaction asked for summaries keeps its own usage, and carries the summary calls' tokens beside it", () => {
    const build = spanBuilder()
    const event = eventOf("c8be7c827a314442", "b7ad6b7169203331")
    const summary = (inputTokens: number, outputTokens: number) =>
      ({ type: "context.summary.completed", data: { model: "openai:gpt-4.1-nano", usage: { inputTokens, outputTokens, costUsd: null }, durationMs: 300 } }) as const
    expect(build(event({ type: "model.turn.started", data: { turn: 3, model: "openai:gpt-4.1-mini" } }, 1_000))).toEqual([])
    expect(build(event(summary(2_400, 180), 1_400))).toEqual([])
    expect(build(event(summary(1_100, 90), 1_800))).toEqual([])
    const [turn] = build(event({
      type: "model.turn.completed",
      data: { turn: 3, model: "openai:gpt-4.1-mini", text: "done", toolCalls: [], usage: { inputTokens: 900, outputTokens: 40, costUsd: null }, durationMs: 1_500 }
    }, 2_500))
    expect(Object.fromEntries((turn?.attributes ?? []).map((a) => [a.key, "intValue" in a.value ? Number(a.value.intValue) : a.value.stringValue]))).toMatchObject({
      "gen_ai.request.model": "gpt-4.1-mini",
      "gen_ai.usage.input_tokens": 900,
      "gen_ai.usage.output_tokens": 40,
      "foundry.summary.calls": 2,
      "foundry.summary.input_tokens": 3_500,
      "foundry.summary.output_tokens": 270
    })
  })
})
