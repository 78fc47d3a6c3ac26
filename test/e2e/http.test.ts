import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { demoModel } from "../../src/models/demo.js"
import { ModelResolver } from "../../src/models/Model.js"
import { http, pendingApproval, runIdOf, startServer, waitForRun } from "../support/server.js"

const root = new URL("../../", import.meta.url).pathname

describe("the example project over HTTP", () => {
  it.scopedLive("a run of the support agent completes with the demo model and records the tool call", () =>
    Effect.gen(function*() {
      const server = yield* startServer(root)
      const created = yield* http(`${server.url}/api/runs`, { body: { agent: "support", message: "Where is order 42?" } })
      expect(created.status).toBe(202)
      const { runId } = created.json as { runId: string }
      const run = yield* waitForRun(server.url, runId)
      expect(run).toMatchObject({ status: "completed", agent: "support", instanceId: "default" })
      const events = yield* http(`${server.url}/api/runs/${runId}/events`)
      const toolCall = (events.json as Array<{ type: string; data: Record<string, unknown> }>).find((e) => e.type === "tool.call.completed")
      expect(toolCall?.data).toMatchObject({ tool: "lookup-order", input: { orderId: "42" }, output: { orderId: "42", status: "shipped" } })
    }))

  it.scopedLive("a refund waits for a person: denied, the agent is told why; approved, the order is refunded", () =>
    Effect.gen(function*() {
      const server = yield* startServer(root)
      const routes = (yield* http(`${server.url}/api/routes`)).json as { routes: ReadonlyArray<{ id: string; approval?: string }> }
      expect(routes.routes.find((r) => r.id === "support/refund-order")).toMatchObject({ approval: "always" })

      const denied = runIdOf((yield* http(`${server.url}/api/runs`, { body: { agent: "support", message: "Refund order 42" } })).json)
      const first = yield* pendingApproval(server.url, denied)
      const decided = yield* http(`${server.url}/api/approvals/${first}`, { body: { decision: "deny", reason: "ask for the receipt first" } })
      expect(decided.json).toMatchObject({ status: "denied", reason: "ask for the receipt first", decidedAt: expect.any(Number), scope: "once" })
      const deniedRun = yield* waitForRun(server.url, denied)
      expect(deniedRun.status).toBe("completed")
      expect(deniedRun.output).toContain("ask for the receipt first")

      const approved = runIdOf((yield* http(`${server.url}/api/runs`, { body: { agent: "support", message: "Refund order 42" } })).json)
      const second = yield* pendingApproval(server.url, approved)
      // One run's approvals, found by the run: the denied run has none pending, the waiting one its own.
      const ofRun = (runId: string, status: string) =>
        Effect.map(http(`${server.url}/api/approvals?status=${status}&run=${runId}`), (r) => (r.json as ReadonlyArray<{ id: string }>).map((a) => a.id))
      expect(yield* ofRun(denied, "pending")).toEqual([])
      expect(yield* ofRun(denied, "denied")).toEqual([first])
      expect(yield* ofRun(approved, "pending")).toEqual([second])
      // The newest first; from the oldest with `order=oldest`, paged oldest first: a page of one,
      // then the page after it; a cursor naming no approval is a 404.
      const page = (query: string) => Effect.map(http(`${server.url}/api/approvals?${query}`), (r) => r.json as ReadonlyArray<{ id: string }>)
      expect((yield* page("")).map((a) => a.id)).toEqual([second, first])
      expect((yield* page("limit=1")).map((a) => a.id)).toEqual([second])
      expect((yield* page("order=oldest&limit=1")).map((a) => a.id)).toEqual([first])
      expect((yield* page(`limit=1&after=${first}`)).map((a) => a.id)).toEqual([second])
      expect(yield* page(`after=${second}`)).toEqual([])
      const unknownCursor = yield* http(`${server.url}/api/approvals?after=apr_nope`)
      expect(unknownCursor.status).toBe(404)
      expect(unknownCursor.json).toMatchObject({ message: expect.stringContaining("there is no approval \"apr_nope\"") })
      yield* http(`${server.url}/api/approvals/${second}`, { body: { decision: "approve" } })
      expect(yield* waitForRun(server.url, approved)).toMatchObject({ status: "completed" })
      const events = (yield* http(`${server.url}/api/runs/${approved}/events`)).json as Array<{ type: string; data: Record<string, unknown> }>
      expect(events.find((e) => e.type === "tool.call.completed")?.data).toMatchObject({
        tool: "refund-order",
        input: { orderId: "42" },
        output: { orderId: "42", refundId: expect.stringMatching(/^rf_42_/) }
      })
    }))

  it.scopedLive("GET /api/approvals lists the newest 100 unless told how many", () =>
    Effect.gen(function*() {
      const server = yield* startServer(root)
      yield* Effect.forEach(Array.from({ length: 101 }, (_, index) => index), () =>
        http(`${server.url}/api/runs`, { body: { agent: "support", message: "Refund order 42" } }), { concurrency: 20, discard: true })
      const pending = (limit: string) =>
        Effect.map(http(`${server.url}/api/approvals?status=pending${limit}`), (r) => (r.json as ReadonlyArray<{ id: string }>).map((a) => a.id))
      let all: ReadonlyArray<string> = []
      for (let attempt = 0; attempt < 400 && all.length < 101; attempt++) {
        all = yield* pending("&limit=1000")
        if (all.length < 101) yield* Effect.sleep("25 millis")
      }
      expect(all.length).toBe(101)
      expect(yield* pending("")).toEqual(all.slice(0, 100))
    }), { timeout: 60_000 })

  it.scopedLive("GET /api/approvals pages newest first with before, oldest first with after, and refuses a cursor in the other order", () =>
    Effect.gen(function*() {
      const server = yield* startServer(root)
      // One after the other: each waits before the next is asked, so they were created in this order.
      const [oldest, middle, newest] = yield* Effect.forEach([1, 2, 3], () =>
        Effect.flatMap(http(`${server.url}/api/runs`, { body: { agent: "support", message: "Refund order 42" } }), (created) =>
          pendingApproval(server.url, runIdOf(created.json))))
      const page = (query: string) => Effect.map(http(`${server.url}/api/approvals?${query}`), (r) => (r.json as ReadonlyArray<{ id: string }>).map((a) => a.id))
      // Newest first: each page the next older ones.
      expect(yield* page("limit=1")).toEqual([newest])
      expect(yield* page(`limit=1&before=${newest}`)).toEqual([middle])
      expect(yield* page(`limit=1&before=${middle}&order=newest`)).toEqual([oldest])
      expect(yield* page(`before=${oldest}`)).toEqual([])
      // Oldest first: each page the next newer ones.
      expect(yield* page("limit=1&order=oldest")).toEqual([oldest])
      expect(yield* page(`limit=1&after=${oldest}`)).toEqual([middle])
      // A cursor with the other order started from the far end (the newest of all after `oldest`):
      // refused, saying which cursor pages that way.
      const refused = [`after=${oldest}&order=newest`, `before=${newest}&order=oldest`, `after=${oldest}&before=${newest}`]
      for (const query of refused) {
        const answer = yield* http(`${server.url}/api/approvals?limit=1&${query}`)
        expect(answer.status).toBe(400)
      }
      expect((yield* http(`${server.url}/api/approvals?after=${oldest}&order=newest`)).json).toMatchObject({
        message: expect.stringContaining("to page newest first, pass the last approval's id of the page before as before")
      })
      const unknownCursor = yield* http(`${server.url}/api/approvals?before=apr_nope`)
      expect(unknownCursor.status).toBe(404)
      expect(unknownCursor.json).toMatchObject({ message: expect.stringContaining("there is no approval \"apr_nope\"") })
    }), { timeout: 60_000 })

  it.scopedLive("the route table says which model an agent runs on when it is not the one it asks for", () =>
    Effect.gen(function*() {
      const fallback = Layer.succeed(ModelResolver, {
        notice: "OPENAI_API_KEY is not set: agents that ask for openai:* run on the offline demo model",
        resolve: (spec) => spec.startsWith("openai:") ? { model: demoModel, fallbackFrom: spec } : { model: demoModel }
      })
      const server = yield* startServer(root, { models: fallback })
      const routes = (yield* http(`${server.url}/api/routes`)).json as { routes: ReadonlyArray<{ id: string; kind: string; runsOn?: unknown }> }
      expect(routes.routes.find((r) => r.kind === "agent" && r.id === "support")).toMatchObject({
        runsOn: { model: "demo", reason: expect.stringContaining("OPENAI_API_KEY is not set") }
      })
      // `support/triage` asks for the demo model, and gets it.
      expect(routes.routes.find((r) => r.kind === "agent" && r.id === "support/triage")?.runsOn).toBeUndefined()
    }))
})

describe("the HTTP API's edges", () => {
  it.scopedLive("an unknown agent gets 404 naming it, the agents there are, and the one a typo meant", () =>
    Effect.gen(function*() {
      const server = yield* startServer(root)
      const response = yield* http(`${server.url}/api/runs`, { body: { agent: "billing", message: "hi" } })
      expect(response.status).toBe(404)
      expect(response.json).toMatchObject({ _tag: "AgentNotFound", agent: "billing" })
      expect(response.json).toMatchObject({ message: expect.stringContaining(`there is no agent "billing"`) })
      expect(response.text).toContain("support/triage")
      const typo = yield* http(`${server.url}/api/runs`, { body: { agent: "suport", message: "hi" } })
      expect(typo.json).toMatchObject({ message: expect.stringContaining(`there is no agent "suport"; did you mean "support"?`) })
    }))

  it.scopedLive("a malformed body gets 400 saying which field, never a stack trace", () =>
    Effect.gen(function*() {
      const server = yield* startServer(root)
      const missing = yield* http(`${server.url}/api/runs`, { body: { agent: "support" } })
      expect(missing.status).toBe(400)
      // Blank text would start a run about nothing.
      const blank = yield* http(`${server.url}/api/runs`, { body: { agent: "support", message: "   " } })
      expect(blank.status).toBe(400)
      expect(blank.json).toMatchObject({ _tag: "BadRequest", message: expect.stringContaining("message: expected text that is not blank") })
      expect(missing.json).toEqual({ _tag: "BadRequest", message: "message: is missing", issues: [{ path: "message", message: "is missing" }] })
      const wrongType = yield* http(`${server.url}/api/runs`, { body: { agent: "support", message: 42 } })
      expect(wrongType.status).toBe(400)
      expect(wrongType.json).toMatchObject({ issues: [{ path: "message", message: "expected a string, got 42" }] })
      const notJson = yield* http(`${server.url}/api/runs`, { body: "{\"agent\": " })
      expect(notJson.status).toBe(400)
      expect(notJson.json).toMatchObject({ _tag: "BadRequest", issues: [] })
      expect(notJson.text).toContain("send valid JSON")
      for (const response of [missing, wrongType, notJson]) expect(response.text).not.toMatch(/\bat .*\.ts:\d+/)
    }))

  it.scopedLive("a 400 lists every wrong field on its own line, saying what was expected, and no Schema tree", () =>
    Effect.gen(function*() {
      const server = yield* startServer(root)
      const response = yield* http(`${server.url}/api/runs`, { body: { agent: "", message: 3 } })
      expect(response.status).toBe(400)
      expect(response.json).toEqual({
        _tag: "BadRequest",
        message: "agent: expected a non-empty agent id\nmessage: expected a string, got 3",
        issues: [
          { path: "agent", message: "expected a non-empty agent id" },
          { path: "message", message: "expected a string, got 3" }
        ]
      })
      const notAnObject = yield* http(`${server.url}/api/runs`, { body: [1, 2] })
      expect(notAnObject.json).toMatchObject({ message: "(body): expected an object, got an array" })
      const decision = yield* http(`${server.url}/api/approvals/apr_nope`, { body: { decision: "maybe" } })
      expect(decision.status).toBe(400)
      expect(decision.json).toMatchObject({ message: `decision: expected one of "approve", "deny", got "maybe"` })
      const limit = yield* http(`${server.url}/api/runs?limit=0&status=lost`)
      expect(limit.status).toBe(400)
      expect((limit.json as { issues: Array<{ path: string }> }).issues.map((i) => i.path)).toEqual(["status", "limit"])
      expect(limit.json).toMatchObject({ message: expect.stringContaining("limit: expected a number between 1 and 1000, got 0") })
      for (const { text } of [response, notAnObject, decision, limit]) {
        expect(text).not.toMatch(/Expected \{|readonly|└─|HttpApiDecodeError/)
      }
    }))

  it.scopedLive("an unknown run, conversation or path gets 404 with a message", () =>
    Effect.gen(function*() {
      const server = yield* startServer(root)
      const run = yield* http(`${server.url}/api/runs/run_nope`)
      expect(run.status).toBe(404)
      expect(run.json).toMatchObject({ _tag: "RunNotFound", runId: "run_nope" })
      // Its events too, as JSON and as a stream: refused before any stream starts.
      for (const accept of ["application/json", "text/event-stream"]) {
        const events = yield* http(`${server.url}/api/runs/run_nope/events`, { headers: { accept } })
        expect(events.status).toBe(404)
        expect(events.json).toMatchObject({ _tag: "RunNotFound", runId: "run_nope" })
      }
      const conversation = yield* http(`${server.url}/api/conversations/conv_nope/messages`)
      expect(conversation.status).toBe(404)
      const wrongConversation = yield* http(`${server.url}/api/runs`, {
        body: { agent: "support", message: "hi", conversation: "conv_nope" }
      })
      expect(wrongConversation.status).toBe(404)
      expect(wrongConversation.json).toMatchObject({ _tag: "ConversationNotFound" })
      const path = yield* http(`${server.url}/api/nothing-here`)
      expect(path.status).toBe(404)
      expect(path.text).toContain("is not a route")
      // A browser asking for a page that is none gets the inspector (which says so), still a 404;
      // under the API's paths it gets the API's error whatever it accepts.
      const page = yield* http(`${server.url}/no-such-page`, { headers: { accept: "text/html,application/xhtml+xml" } })
      expect(page.status).toBe(404)
      expect(page.headers.get("content-type")).toContain("text/html")
      expect(page.text).toContain("/assets/inspector.js")
      // A browser's own Accept gets the page; a client that weighs JSON more, or refuses HTML, gets JSON.
      const browser = yield* http(`${server.url}/no-such-page`, { headers: { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" } })
      expect(browser.headers.get("content-type")).toContain("text/html")
      for (const accept of ["text/html;q=0.5, application/json", "text/html;q=0, */*"]) {
        const client = yield* http(`${server.url}/no-such-page`, { headers: { accept } })
        expect([client.status, client.headers.get("content-type")]).toEqual([404, expect.stringContaining("application/json")])
      }
      const apiPath = yield* http(`${server.url}/api/nothing-here`, { headers: { accept: "text/html" } })
      expect(apiPath.status).toBe(404)
      expect(apiPath.json).toMatchObject({ _tag: "NotFound" })
    }))

  it.scopedLive("lists runs newest first with filters, and serves routes, health and the OpenAPI document", () =>
    Effect.gen(function*() {
      const server = yield* startServer(root)
      const ids: Array<string> = []
      for (const message of ["Where is order 42?", "Where is order 7?"]) {
        const created = yield* http(`${server.url}/api/runs`, { body: { agent: "support", message } })
        const { runId } = created.json as { runId: string }
        ids.push(runId)
        yield* waitForRun(server.url, runId)
      }
      const triage = yield* http(`${server.url}/api/runs`, { body: { agent: "support/triage", message: "Classify: site is down" } })
      yield* waitForRun(server.url, (triage.json as { runId: string }).runId)
      const listed = yield* http(`${server.url}/api/runs?agent=support&status=completed&limit=10`)
      expect((listed.json as Array<{ id: string }>).map((r) => r.id)).toEqual([...ids].reverse())
      const limited = yield* http(`${server.url}/api/runs?limit=1`)
      expect(limited.json).toHaveLength(1)
      const first = yield* http(`${server.url}/api/runs/${ids[0]}`)
      const ofConversation = yield* http(`${server.url}/api/runs?conversation=${(first.json as { conversationId: string }).conversationId}`)
      expect((ofConversation.json as Array<{ id: string }>).map((r) => r.id)).toEqual([ids[0]])
      const badLimit = yield* http(`${server.url}/api/runs?limit=0`)
      expect(badLimit.status).toBe(400)

      const routes = yield* http(`${server.url}/api/routes`)
      const kinds = (routes.json as { routes: Array<{ kind: string; id: string }> }).routes.map((r) => `${r.kind}:${r.id}`)
      expect(kinds).toEqual(expect.arrayContaining([
        "agent:support",
        "agent:support/triage",
        "tool:support/lookup-order",
        "tool:current-time",
        "schedule:daily-review",
        "playbook:urgent-ticket",
        "environment:workspace"
      ]))
      const health = yield* http(`${server.url}/health`)
      expect(health.json).toMatchObject({ status: "ok", agents: 2 })
      const openapi = yield* http(`${server.url}/api/openapi.json`)
      expect(openapi.json).toMatchObject({ openapi: "3.1.0", paths: { "/api/runs": {}, "/api/runs/{runId}": {} } })
      // Every 400 the API sends is a BadRequest, and the document says so rather than HttpApi's default.
      expect(openapi.text).toContain(`"BadRequest"`)
      expect(openapi.text).not.toContain("HttpApiDecodeError")
      // No schema id twice: a validator that compiles the document (Ajv, client generators) refuses one that resolves to two schemas.
      const schemaIds = [...openapi.text.matchAll(/"\$id":"([^"]*)"/g)].map((match) => match[1])
      expect(schemaIds.length - new Set(schemaIds).size).toBe(0)
      // A page cursor that names no run is said, not read as the end of the list.
      const cursor = yield* http(`${server.url}/api/runs?before=run_nope`)
      expect(cursor.status).toBe(404)
      expect(cursor.json).toMatchObject({ _tag: "RunNotFound" })
      // A webhook's every answer and header, as a sender's validator checks them.
      const hook = (openapi.json as { paths: Record<string, { post: { responses: object; parameters: ReadonlyArray<{ name: string }> } }> }).paths["/hooks/{name}"]
      expect(Object.keys(hook?.post.responses ?? {}).sort()).toEqual(["200", "202", "400", "401", "404", "409", "500", "503"])
      expect(hook?.post.parameters.map((p) => p.name)).toEqual(expect.arrayContaining(["x-event-id", "x-foundry-timestamp", "x-foundry-signature"]))
    }))
})

describe("the store", () => {
  it.live("keeps runs, conversations and events across a restart of the server", () =>
    Effect.gen(function*() {
      const storeFile = join(mkdtempSync(join(tmpdir(), "foundry-restart-")), "foundry.db")
      const first = yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* startServer(root, { storeFile })
        const created = yield* http(`${server.url}/api/runs`, { body: { agent: "support", message: "Where is order 7?" } })
        const ids = created.json as { runId: string; conversationId: string }
        yield* waitForRun(server.url, ids.runId)
        return ids
      }))
      yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* startServer(root, { storeFile })
        const run = yield* http(`${server.url}/api/runs/${first.runId}`)
        expect(run.json).toMatchObject({ status: "completed", conversationId: first.conversationId })
        expect((run.json as { output: string }).output).toContain("delivered")
        const messages = yield* http(`${server.url}/api/conversations/${first.conversationId}/messages`)
        expect((messages.json as Array<{ role: string }>).map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"])
        // Paged by seq: two at a time, the next page after the last one's seq.
        const firstPage = (yield* http(`${server.url}/api/conversations/${first.conversationId}/messages?limit=2`)).json as Array<{ role: string; seq: number }>
        expect(firstPage.map((m) => m.role)).toEqual(["user", "assistant"])
        const nextPage = yield* http(`${server.url}/api/conversations/${first.conversationId}/messages?limit=2&after=${firstPage[1]!.seq}`)
        expect((nextPage.json as Array<{ role: string }>).map((m) => m.role)).toEqual(["tool", "assistant"])
        const events = yield* http(`${server.url}/api/runs/${first.runId}/events`)
        expect((events.json as Array<{ type: string }>).at(-1)?.type).toBe("run.completed")
      }))
    }))
})
