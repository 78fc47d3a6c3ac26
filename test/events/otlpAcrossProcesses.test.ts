/**
 * The OpenTelemetry export of several processes on one store (a cluster's runners, two servers on
 * one SQLite file): each follows every process's events, and each span still reaches the collector
 * once, from the process that ended it, built from the events of both.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, type Scope } from "effect"
import * as EventLog from "../../src/events/EventLog.js"
import type { EventContent } from "../../src/events/FoundryEvent.js"
import { OtlpExportLive } from "../../src/events/OtlpExport.js"
import { backends, type DatabaseLayer } from "../journal/backends.js"
import { draft } from "../journal/fixtures.js"
import { withEnv } from "../support/environment.js"
import { collector, type Span } from "./otlpCollector.js"
import { processOn } from "./storeProcesses.js"

const suspendedRun = { id: "r1", agent: "shop", instanceId: "acme", conversationId: "c1" }
const localRun = { id: "r2", agent: "shop", instanceId: "acme", conversationId: "c2" }

/** The event of `run`'s root span (the run's own span, `run-<id>`). */
const ofRun = (run: typeof suspendedRun, content: EventContent): EventLog.EventDraft => ({ ...draft(`run-${run.id}`, run, content), parentSpanId: null })

const call = { toolCallId: "call_1", tool: "transfer" }
const turn = (n: number): EventContent => ({ type: "model.turn.started", data: { turn: n, model: "demo" } })
const answered = (n: number): EventContent => ({
  type: "model.turn.completed",
  data: { turn: n, model: "demo", text: "", toolCalls: [], usage: { inputTokens: 1, outputTokens: 2, costUsd: null }, durationMs: 5 }
})
const completed: EventContent = { type: "run.completed", data: { output: "done", turns: 2 } }

const tests = (fresh: Effect.Effect<DatabaseLayer, unknown, Scope.Scope>) => {
  it.scopedLive("each span reaches the collector once, a run suspended in one process and resumed in the other included, with its start and marks from both", () =>
    Effect.gen(function*() {
      const place = yield* fresh
      const here = yield* processOn(place)
      const there = yield* processOn(place)
      const otel = yield* collector()
      yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: otel.url, OTEL_BSP_SCHEDULE_DELAY: "50" })
      for (const log of [here, there]) yield* Layer.build(OtlpExportLive.pipe(Layer.provide(Layer.succeed(EventLog.EventLog, log))))
      // Both exporters follow (their tails started) before anything is written.
      yield* Effect.sleep("200 millis")

      // Run r1 starts here, asks for an approval and suspends.
      const start = yield* here.emit(ofRun(suspendedRun, { type: "run.started", data: { input: "pay", model: "demo" } }))
      yield* here.emit(draft("turn-1", suspendedRun, turn(1)))
      yield* here.emit(draft("turn-1", suspendedRun, answered(1)))
      yield* here.emit(draft("approval-1", suspendedRun, {
        type: "approval.requested",
        data: { approvalId: "apr_1", ...call, input: { amount: 1 }, expiresAt: 9_000_000_000_000 }
      }))
      yield* here.emit(ofRun(suspendedRun, { type: "run.suspended", data: { reason: "approval", approvalId: "apr_1", tool: "transfer" } }))
      // A run that starts and ends here alone.
      yield* here.emit(ofRun(localRun, { type: "run.started", data: { input: "hello", model: "demo" } }))
      yield* here.emit(ofRun(localRun, completed))
      // The other process's tail has read r1's start before the approval is decided there.
      yield* Effect.sleep("300 millis")
      yield* there.emit(draft("approval-1", suspendedRun, { type: "approval.decided", data: { approvalId: "apr_1", ...call, status: "approved" } }))
      yield* there.emit(ofRun(suspendedRun, { type: "run.resumed", data: { input: "pay", model: "demo" } }))
      yield* there.emit(draft("call-1", suspendedRun, { type: "tool.call.started", data: { ...call, input: { amount: 1 } } }))
      yield* there.emit(draft("call-1", suspendedRun, { type: "tool.call.completed", data: { ...call, input: { amount: 1 }, output: "paid", durationMs: 3 } }))
      yield* there.emit(draft("turn-2", suspendedRun, turn(2)))
      yield* there.emit(draft("turn-2", suspendedRun, answered(2)))
      const end = yield* there.emit(ofRun(suspendedRun, completed))

      // r1's run, two turns, its approval and its tool call; r2's run.
      const expected = ["approval-1", "call-1", "run-r1", "run-r2", "turn-1", "turn-2"]
      for (let attempt = 0; attempt < 250 && new Set(otel.spans().map((s) => s.spanId)).size < expected.length; attempt++) yield* Effect.sleep("20 millis")
      // What either process would still send comes within a few of their 50 ms batches.
      yield* Effect.sleep("600 millis")
      const ids = otel.spans().map((s) => s.spanId).sort()
      expect(ids).toEqual(expected)

      const run = otel.spans().find((s) => s.spanId === "run-r1")
      const nanos = (ms: number) => `${BigInt(ms) * 1_000_000n}`
      expect(run).toMatchObject<Partial<Span>>({ startTimeUnixNano: nanos(start.time), endTimeUnixNano: nanos(end.time) })
      expect(run?.events?.map((e) => e.name)).toEqual(["run.suspended", "run.resumed"])
      // The approval span, requested here and decided there, has its start from here.
      const approval = otel.spans().find((s) => s.spanId === "approval-1")
      expect(approval?.name).toBe("approval transfer")
      expect(BigInt(approval?.startTimeUnixNano ?? "0") <= BigInt(run?.events?.[0]?.timeUnixNano ?? "0")).toBe(true)
    }), { timeout: 20_000 })
}

for (const backend of backends) {
  describe.skipIf(backend.skip)(`OpenTelemetry export of processes on one ${backend.name} store`, () => tests(backend.fresh))
}
