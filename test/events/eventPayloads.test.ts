import { tmpdir } from "node:os"
import { join } from "node:path"
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { Database } from "../../src/durable/Database.js"
import type { RunRecord } from "../../src/durable/records.js"
import { eventPayloads } from "../../src/events/eventPayloads.js"
import { insertEvents, type UnsequencedEvent } from "../../src/events/EventStorage.js"
import { type EventContent, EventType, FoundryEvent } from "../../src/events/FoundryEvent.js"
import { eventOf } from "../../src/journal/trace.js"
import { EventPage } from "../../src/transports/http/api/EventsGroup.js"
import { durableProject } from "../support/durableProject.js"
import { http, startServer } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"
import { sqliteStore } from "../support/sqliteStore.js"

/** One event of every stored type, and the second shape of each type that has two. */
const samples: ReadonlyArray<EventContent> = [
  { type: "run.queued", data: { input: "Where is order 42?", parentRunId: "run_parent", source: { schedule: "daily", nested: { list: [1, "two", null] } } } },
  { type: "run.started", data: { input: "Where is order 42?", model: "demo", requestedModel: "openai:gpt-4.1" } },
  { type: "run.completed", data: { output: "On its way.", turns: 2 } },
  { type: "run.failed", data: { error: "model demo failed" } },
  { type: "run.cancelled", data: { from: "suspended" } },
  { type: "run.suspended", data: { reason: "approval", approvalId: "apr_1", tool: "transfer" } },
  { type: "run.suspended", data: { reason: "child", childRunId: "run_child", tool: "worker" } },
  { type: "run.resumed", data: { input: "Where is order 42?", model: "demo" } },
  { type: "run.resumed", data: { reason: "child", childRunId: "run_child" } },
  { type: "approval.requested", data: { approvalId: "apr_1", toolCallId: "call_1", tool: "transfer", input: { amount: 1 }, expiresAt: 9_000 } },
  { type: "approval.decided", data: { approvalId: "apr_1", toolCallId: "call_1", tool: "transfer", status: "denied", reason: "too much" } },
  { type: "approval.decided", data: { toolCallId: "call_2", tool: "transfer", status: "approved", grantedBy: "apr_1" } },
  { type: "model.turn.started", data: { turn: 1, model: "demo" } },
  { type: "model.retry", data: { turn: 1, model: "demo", status: 503, error: "unavailable" } },
  { type: "model.fallback", data: { turn: 1, from: "demo", to: "backup", status: null, error: "timed out" } },
  {
    type: "model.turn.completed",
    data: {
      turn: 1,
      model: "demo",
      text: "",
      toolCalls: [{ id: "call_1", name: "lookup", arguments: "{\"orderId\":\"42\"}" }],
      usage: { inputTokens: 10, outputTokens: 5, costUsd: null },
      durationMs: 12
    }
  },
  { type: "tool.call.started", data: { toolCallId: "call_1", tool: "lookup", input: { orderId: "42" } } },
  { type: "tool.call.completed", data: { toolCallId: "call_1", tool: "lookup", input: { orderId: "42" }, output: { status: "shipped" }, durationMs: 3 } },
  { type: "tool.call.failed", data: { toolCallId: "call_3", tool: "lookup", error: "not run: the run was cancelled", durationMs: 0 } },
  { type: "delivery.received", data: { deliveryId: "dlv_1", webhook: "tickets", eventId: null } },
  { type: "playbook.matched", data: { deliveryId: "dlv_1", webhook: "tickets", playbook: "triage" } },
  { type: "playbook.matched", data: { event: "ticket-classified", playbook: "escalate", agent: "lead", instanceId: "t-1" } },
  { type: "playbook.skipped", data: { deliveryId: "dlv_1", webhook: "tickets", playbook: "urgent", reason: "when(event) is false" } },
  { type: "playbook.skipped", data: { event: "ticket-classified", playbook: "escalate", reason: "instance \"t-1\" is paused", agent: "lead", instanceId: "t-1" } },
  // As stored before an emitted event's skip named the playbook's agent: still read.
  { type: "playbook.skipped", data: { event: "ticket-classified", playbook: "escalate", reason: "the event does not match its schema" } },
  { type: "playbook.failed", data: { deliveryId: "dlv_1", webhook: "tickets", playbook: "broken", call: "when(event)", error: "playbooks/broken.ts: when(event) threw Error: no" } },
  { type: "playbook.failed", data: { event: "ticket-classified", playbook: "broken", agent: "lead", call: "message(event)", error: "playbooks/broken.ts: message(event) gave 1" } },
  { type: "instance.provisioned", data: { deliveryId: "dlv_1", webhook: "tickets", playbook: "triage" } },
  {
    type: "instance.created",
    data: { provisioningKey: "customer-7", context: { company: "Acme" }, installations: [{ kind: "mcp", capability: "crm" }], by: "playbook:triage" }
  },
  { type: "instance.updated", data: { context: { company: "Acme Inc" } } },
  { type: "instance.paused", data: { reason: "unpaid" } },
  { type: "instance.resumed", data: {} },
  { type: "instance.archived", data: { reason: null } },
  { type: "instance.installed", data: { kind: "tool", capability: "crm-notes", config: { baseUrl: "https://crm.test", apiKey: "<redacted>" } } },
  { type: "instance.uninstalled", data: { kind: "tool", capability: "crm-notes" } },
  { type: "installation.skipped", data: { kind: "mcp", capability: "crm", reason: "the agent's own MCP server \"crm\" (agents/desk/agent.ts) has its name" } },
  { type: "playbook.dispatched", data: { deliveryId: "dlv_1", webhook: "tickets", playbook: "triage", runId: "run_2" } },
  { type: "timer.armed", data: { tool: "foundry_sleep", timerId: "agent:tmr_0123456789abcdef0123", firesAt: "2026-07-01T11:00:00.000Z" } },
  // As stored before the timer's id and time were recorded: still read.
  { type: "timer.armed", data: { tool: "foundry_sleep" } },
  { type: "context.compacting", data: { method: "summary", beforeTokens: 9_000, window: 8_000 } },
  { type: "context.compacted", data: { method: "elide", beforeTokens: 9_000, afterTokens: 4_000 } },
  { type: "context.uncompacted", data: { method: "summary", tokens: 9_000, reason: "nothing comes before this run's message to summarize" } },
  { type: "context.summary.completed", data: { model: "openai:gpt-4.1-nano", usage: { inputTokens: 2_400, outputTokens: 180, costUsd: 0.000312 }, durationMs: 900 } },
  { type: "budget.exceeded", data: { budget: "maxTokensPerRun", limit: 100, used: 120, setIn: "foundry.config.ts" } }
]

// Recent enough that the server's retention keeps them.
const now = Date.now()

/** `content` as the store writes it, the `n`th event of its run. */
const written = (content: EventContent, n: number): UnsequencedEvent => ({
  ...content,
  id: `evt_${n}`,
  time: now + n,
  traceId: "0af7651916cd43dd8448eb211c80319c",
  spanId: `span${n}`,
  parentSpanId: null,
  runId: "run_1",
  conversationId: "conv_1",
  instanceId: "default",
  agent: "worker",
  release: "dev"
})

/** Writes `events` into a new store file, then rows no schema reads: what an older version may have left. */
const storeWith = (events: ReadonlyArray<UnsequencedEvent>, unreadableAfter: number) =>
  Effect.gen(function*() {
    const store = sqliteStore("store")
    yield* Effect.gen(function*() {
      const database = yield* Database
      const sql = yield* SqlClient.SqlClient
      yield* database.write({ statements: [insertEvents(events.slice(0, unreadableAfter))] })
      const columns = "(id, time, type, trace_id, span_id, parent_span_id, run_id, conversation_id, instance_id, agent, release, data)"
      yield* sql.unsafe(`INSERT INTO foundry_events ${columns} VALUES
        ('old_1', ${now}, 'run.completed', 't', 's', NULL, 'run_1', 'conv_1', 'default', 'worker', 'dev', '{"result":"shipped"}'),
        ('old_2', ${now}, 'run.renamed', 't', 's', NULL, 'run_1', 'conv_1', 'default', 'worker', 'dev', '{}'),
        ('old_3', ${now}, 'run.failed', 't', 's', NULL, 'run_1', 'conv_1', 'default', 'worker', 'dev', 'not json')`)
      yield* database.write({ statements: [insertEvents(events.slice(unreadableAfter))] })
    }).pipe(Effect.provide(store.layer), Effect.scoped)
    return store.file
  })

/** Every page of `GET /api/events?limit=<limit>`, each checked against the API's schema. */
const pages = (url: string, limit: number) =>
  Effect.gen(function*() {
    const all: Array<typeof EventPage.Type> = []
    let after = 0
    while (true) {
      const page = Schema.decodeUnknownSync(EventPage)((yield* http(`${url}/api/events?limit=${limit}&after=${after}`)).json)
      all.push(page)
      if (page.nextAfter === undefined) return all
      after = page.nextAfter
    }
  })

describe("typed event payloads", () => {
  it("every event type has a payload schema and a member of the FoundryEvent union", () => {
    const members = FoundryEvent.members.flatMap((member) => member.fields.type.literals)
    expect([...members].sort()).toEqual([...EventType.literals].sort())
    for (const type of EventType.literals) expect(Schema.isSchema(eventPayloads[type])).toBe(true)
    // Every type but the ephemeral text delta is in the samples the next test stores.
    expect(new Set(samples.map((s) => s.type))).toEqual(new Set(EventType.literals.filter((t) => t !== "model.delta")))
  })

  it.scopedLive("a stored event of each type comes back from GET /api/events as it was written; rows that do not decode are skipped, pages stay full", () =>
    Effect.gen(function*() {
      const events = samples.map(written)
      const storeFile = yield* storeWith(events, 10)
      const root = yield* tempProject(durableProject(join(tmpdir(), `foundry-payloads-${randomUUID()}.log`)))
      const server = yield* startServer(root, { storeFile })

      const [page] = yield* pages(server.url, 1000)
      expect(page?.events).toEqual(events.map((event, i) => ({ ...event, seq: i < 10 ? i + 1 : i + 4 })))

      // Pages of 4 around the three unreadable rows: each full until the last, every event once.
      const paged = yield* pages(server.url, 4)
      expect(paged.slice(0, -1).every((p) => p.events.length === 4)).toBe(true)
      expect(paged.flatMap((p) => p.events.map((e) => e.id))).toEqual(events.map((e) => e.id))
    }))

  it("an emitter's misspelt or missing payload field does not compile (checked by tsc)", () => {
    const compileOnly = (run: RunRecord) => [
      eventOf(run, "run.completed", { output: "done", turns: 1 }),
      // @ts-expect-error `eror` is not a field of run.failed
      eventOf(run, "run.failed", { eror: "boom" }),
      // @ts-expect-error run.completed needs `turns`
      eventOf(run, "run.completed", { output: "done" }),
      // @ts-expect-error a tool call's events name the call
      eventOf(run, "tool.call.started", { tool: "lookup", input: {} })
    ]
    expect(typeof compileOnly).toBe("function")
  })
})
