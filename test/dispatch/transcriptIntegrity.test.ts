/**
 * Conversations stay valid for the strictest provider whatever happens to a run: every scenario
 * talks to a fake Chat Completions server that rejects transcripts exactly as OpenAI does, through
 * the real `openai` client (the OpenAI adapter), and after each one two further messages of the
 * same conversation must complete without a single rejected request.
 */
import { randomUUID } from "node:crypto"
import { writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as OpenAi from "../../src/models/openai.js"
import { freePort, startCli } from "../support/cli.js"
import { durableProject, plan, type Plan } from "../support/durableProject.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { type ReplyFn, strictOpenAi, text, toolCalls } from "../support/strictOpenAi.js"
import { tempProject } from "../support/tempProject.js"

const isPlan = (value: unknown): value is Plan => typeof value === "object" && value !== null

/**
 * The planned model of the durable tests, as a Chat Completions server: the last user message is a
 * `Plan`; with nothing after it, the planned tool calls; after tool results, "done: <results>".
 */
const planned: ReplyFn = (request) => {
  const lastUser = request.messages.findLastIndex((m) => m.role === "user")
  const last = request.messages[lastUser]
  // Its last paragraph: two user messages in a row are sent as one, a blank line apart.
  const parsed: unknown = last !== undefined && last.role === "user" ? JSON.parse(last.content.split("\n\n").at(-1) ?? "{}") : {}
  const current = isPlan(parsed) ? parsed : {}
  const after = request.messages.slice(lastUser + 1)
  const calls = current.calls ?? []
  if (after.length === 0) {
    return calls.length === 0
      ? text("nothing to do")
      : toolCalls(...calls.map((call) => ({ id: `call_${randomUUID().slice(0, 8)}`, name: call.name, arguments: JSON.stringify(call.arguments) })))
  }
  return text(`done: ${after.flatMap((m) => m.role === "tool" ? [m.content] : []).join(" | ")}`)
}

interface Created {
  readonly runId: string
  readonly conversationId: string
}

const isCreated = (body: unknown): body is Created => typeof body === "object" && body !== null && "runId" in body && "conversationId" in body

const submit = (url: string, message: string, conversation?: string) =>
  Effect.gen(function*() {
    const response = yield* http(`${url}/api/runs`, { body: { agent: "worker", message, ...(conversation === undefined ? {} : { conversation }) } })
    expect(response.status).toBe(202)
    if (!isCreated(response.json)) return yield* Effect.die(new Error(`unexpected answer ${response.text}`))
    return response.json
  })

const eventTypes = (url: string, runId: string) =>
  Effect.map(http(`${url}/api/runs/${runId}/events`), (r) =>
    Array.isArray(r.json) ? r.json.flatMap((e: unknown) => typeof e === "object" && e !== null && "type" in e ? [String(e.type)] : []) : [])

const waitForEvent = (url: string, runId: string, type: string) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 400; attempt++) {
      if ((yield* eventTypes(url, runId)).includes(type)) return
      yield* Effect.sleep("25 millis")
    }
    return yield* Effect.die(new Error(`run ${runId} never emitted ${type}`))
  })

const waitForStatus = (url: string, runId: string, status: string) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 400; attempt++) {
      const run = yield* http(`${url}/api/runs/${runId}`)
      if (typeof run.json === "object" && run.json !== null && "status" in run.json && run.json.status === status) return
      yield* Effect.sleep("25 millis")
    }
    return yield* Effect.die(new Error(`run ${runId} never became ${status}`))
  })

const record = (line: string) => plan({ calls: [{ name: "record", arguments: { line } }] })

/** Two more messages in the conversation, each completing with its tool's result. */
const twoMore = (url: string, conversation: string) =>
  Effect.gen(function*() {
    for (const line of ["after-1", "after-2"]) {
      const next = yield* submit(url, record(line), conversation)
      const done = yield* waitForRun(url, next.runId)
      expect(done).toMatchObject({ status: "completed", output: `done: recorded ${line}` })
    }
  })

const setup = (config = "") =>
  Effect.gen(function*() {
    // Roles that alternate too, as the strict chat templates of compatible servers want them.
    const provider = yield* strictOpenAi({ otherwise: planned, alternatingRoles: true })
    const log = join(tmpdir(), `foundry-integrity-${randomUUID()}.log`)
    const root = yield* tempProject(durableProject(log, config))
    const server = yield* startServer(root, { model: OpenAi.make({ model: "gpt-4.1-mini", apiKey: "test", baseURL: provider.url }) })
    return { provider, url: server.url }
  })

describe("transcript integrity against a strict Chat Completions server", () => {
  it.scopedLive("steer during a tool call, then two more messages", () =>
    Effect.gen(function*() {
      const { provider, url } = yield* setup()
      const first = yield* submit(url, plan({ calls: [{ name: "slow", arguments: { ms: 5000 } }] }))
      yield* waitForEvent(url, first.runId, "tool.call.started")
      const steered = yield* http(`${url}/api/runs/${first.runId}/steer`, { body: { message: record("instead") } })
      expect(steered.status).toBe(202)
      const next = isCreated(steered.json) ? steered.json.runId : ""
      expect(yield* waitForRun(url, next)).toMatchObject({ status: "completed", output: "done: recorded instead" })
      yield* twoMore(url, first.conversationId)
      const transcript = yield* http(`${url}/api/conversations/${first.conversationId}/messages`)
      expect(transcript.text).toContain("cancelled by steer")
      expect(provider.rejected).toEqual([])
    }))

  it.scopedLive("a run steered while it waited its turn: the model reads its message with the steer's", () =>
    Effect.gen(function*() {
      const { provider, url } = yield* setup()
      const busy = yield* submit(url, plan({ calls: [{ name: "slow", arguments: { ms: 1500 } }] }))
      yield* waitForEvent(url, busy.runId, "tool.call.started")
      const waiting = yield* submit(url, "book Paris", busy.conversationId)
      const steered = yield* http(`${url}/api/runs/${waiting.runId}/steer`, { body: { message: record("make it Rome") } })
      expect(steered.status).toBe(202)
      const next = isCreated(steered.json) ? steered.json.runId : ""
      expect(yield* waitForRun(url, next)).toMatchObject({ status: "completed", output: "done: recorded make it Rome" })
      const steeredTurns = provider.requests.map((request) => JSON.stringify(request)).filter((request) => request.includes("make it Rome"))
      expect(steeredTurns.length).toBeGreaterThan(0)
      for (const request of steeredTurns) expect(request).toContain("book Paris")
      yield* twoMore(url, busy.conversationId)
      expect(provider.rejected).toEqual([])
    }))

  it.scopedLive("cancel during a tool call, then two more messages", () =>
    Effect.gen(function*() {
      const { provider, url } = yield* setup()
      const first = yield* submit(url, plan({ calls: [{ name: "slow", arguments: { ms: 5000 } }] }))
      yield* waitForEvent(url, first.runId, "tool.call.started")
      expect((yield* http(`${url}/api/runs/${first.runId}/cancel`, { method: "POST" })).status).toBe(200)
      yield* twoMore(url, first.conversationId)
      expect(provider.rejected).toEqual([])
    }))

  for (const decision of ["approve", "deny", "expire"] as const) {
    it.scopedLive(`a message while an approval is pending, then the approval is ${{ approve: "approved", deny: "denied", expire: "left to expire" }[decision]}, then two more`, () =>
      Effect.gen(function*() {
        const { provider, url } = yield* setup(decision === "expire" ? `{ approvalTimeout: "1500 millis" }` : "")
        const first = yield* submit(url, plan({ calls: [{ name: "transfer", arguments: { amount: 5 } }] }))
        yield* waitForStatus(url, first.runId, "suspended")
        const meanwhile = yield* submit(url, record("meanwhile"), first.conversationId)
        expect(yield* waitForRun(url, meanwhile.runId)).toMatchObject({ status: "completed", output: "done: recorded meanwhile" })
        if (decision !== "expire") {
          const approvals = yield* http(`${url}/api/approvals?status=pending`)
          const id = Array.isArray(approvals.json) && typeof approvals.json[0] === "object" && approvals.json[0] !== null && "id" in approvals.json[0]
            ? String(approvals.json[0].id)
            : ""
          expect((yield* http(`${url}/api/approvals/${id}`, { body: { decision } })).status).toBe(200)
        }
        const decided = yield* waitForRun(url, first.runId)
        expect(decided.status).toBe("completed")
        expect(decided.output).toContain(
          decision === "approve" ? "transferred 5" : decision === "deny" ? "denied" : "expired"
        )
        yield* twoMore(url, first.conversationId)
        expect(provider.rejected).toEqual([])
      }))
  }

  it.scopedLive("SIGKILL during a tool call, restart, then two more messages", () =>
    Effect.gen(function*() {
      // Roles that alternate too, as the strict chat templates of compatible servers want them.
    const provider = yield* strictOpenAi({ otherwise: planned, alternatingRoles: true })
      const log = join(tmpdir(), `foundry-integrity-${randomUUID()}.log`)
      const files = durableProject(log)
      const agent = files["agents/worker/agent.ts"] ?? ""
      const root = yield* tempProject({ ...files, "agents/worker/agent.ts": agent.replace("maxTurns: 20", `maxTurns: 20,\n  model: "openai:gpt-4.1-mini"`) })
      const env = { OPENAI_API_KEY: "test", OPENAI_BASE_URL: provider.url }
      const port = yield* freePort
      const url = `http://127.0.0.1:${port}`
      const first = yield* startCli(["start", root, "--port", String(port)], { env })
      yield* first.waitFor(/listening on/)
      const run = yield* submit(url, plan({ calls: [{ name: "slow", arguments: { ms: 60_000 } }] }))
      yield* waitForEvent(url, run.runId, "tool.call.started")
      first.child.kill("SIGKILL")
      yield* Effect.sleep("200 millis")
      // The restarted process runs the slow call again; make it quick this time.
      writeFileSync(join(root, "agents/worker/tools/slow.tool.ts"), (files["agents/worker/tools/slow.tool.ts"] ?? "").replace("yield* Effect.sleep(ms)", "yield* Effect.sleep(Math.min(ms, 10))"))
      const second = yield* startCli(["start", root, "--port", String(port)], { env })
      yield* second.waitFor(/listening on/)
      expect(yield* waitForRun(url, run.runId)).toMatchObject({ status: "completed", output: "done: slept 60000" })
      yield* twoMore(url, run.conversationId)
      expect(provider.rejected).toEqual([])
    }), { timeout: 90_000 })
})
