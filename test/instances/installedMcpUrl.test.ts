/**
 * An installed MCP server whose URL carries a credential in its query (`?token=...`, kept as a
 * secret of the installation's config): when the server is down, refuses, or goes away, the run's
 * error and every event name the server by its origin only.
 */
import { randomUUID } from "node:crypto"
import { createServer, type Server as HttpServer } from "node:http"
import { describe, expect, it } from "@effect/vitest"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import * as Scripted from "../../src/models/scripted.js"
import { close, listen } from "../support/loopback.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"
import { allEvents } from "./apiProject.js"

const secret = "secret123"
/** A secret URL's token, in its path. */
const pathSecret = `sk-${randomUUID().replaceAll("-", "")}`

const project = {
  "agents/desk/agent.ts": `import { defineAgent } from "foundry"

export default defineAgent({
  description: "The help desk",
  instructions: "Help the customer.",
  maxTurns: 3
})
`,
  "mcp/crm.ts": `import { Redacted, Schema } from "effect"
import { defineMcpServer } from "foundry"

export default defineMcpServer({
  description: "The customer's CRM, reached with the token in its URL",
  installable: { config: Schema.Struct({ url: Schema.Redacted(Schema.String) }) },
  connect: (c) => ({ url: Redacted.value(c.url) })
})
`
}

/** Calls the CRM's `lookup` on its first turn, then answers with the results it got. */
const model = Scripted.make((request, index) => {
  if (index === 0) return { toolCalls: [{ name: "crm__lookup", arguments: {} }] }
  const results = request.messages.flatMap((m) => m._tag === "tool" ? [m.content] : [])
  return { text: `done: ${results.join(" | ")}` }
}, "desk")

/** Calls the CRM tools its message names (`refuse crash`) on its first turn, then answers with the results. */
const namingModel = Scripted.make((request, index) => {
  const asked = request.messages.find((m) => m._tag === "user")?.content ?? ""
  if (index === 0) return { toolCalls: asked.split(" ").map((tool) => ({ name: `crm__${tool}`, arguments: {} })) }
  const results = request.messages.flatMap((m) => m._tag === "tool" ? [m.content] : [])
  return { text: `done: ${results.join(" | ")}` }
}, "desk")

/**
 * A stateless Streamable HTTP MCP server with one tool, `lookup`. A request without the token in
 * its query, or any request once `refuse` was called, is answered 404 with the request's URL
 * quoted (as Fastify's default answer does).
 */
const crmServer = () => {
  let refusing = false
  const server = createServer((request, response) => {
    const allowed = (request.url ?? "").includes(`token=${secret}`) || (request.url ?? "").startsWith(`/s/${pathSecret}/`)
    if (refusing || !allowed) {
      response.writeHead(404, { "content-type": "text/plain" }).end(`Route ${request.method}:${request.url} not found`)
      return
    }
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
    const mcp = new Server({ name: "crm", version: "1.0.0" }, { capabilities: { tools: {} } })
    mcp.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: ["lookup", "refuse", "crash"].map((name) => ({ name, description: `The account: ${name}`, inputSchema: { type: "object", properties: {} } }))
    }))
    const quoted = `http://${request.headers.host}${request.url}`
    mcp.setRequestHandler(CallToolRequestSchema, (call) => {
      // Servers that quote the request's URL back, as an error result and as a thrown error.
      if (call.params.name === "refuse") return { isError: true, content: [{ type: "text", text: `cannot serve ${quoted}` }] }
      if (call.params.name === "crash") throw new Error(`crashed serving ${quoted}`)
      return { content: [{ type: "text", text: "account in good standing" }] }
    })
    void mcp.connect(transport).then(() => transport.handleRequest(request, response))
  })
  return Object.assign(server, {
    refuse: () => {
      refusing = true
    }
  })
}

/** A port nothing listens on any more. */
const closedPort = Effect.gen(function*() {
  const server: HttpServer = createServer()
  const port = yield* listen(server)
  yield* close(server)
  return port
})

const install = (url: string, instance: string, crmUrl: string) =>
  Effect.map(
    http(`${url}/api/instances`, { body: { agent: "desk", id: instance, installations: [{ kind: "mcp", id: "crm", config: { url: crmUrl } }] } }),
    (response) => expect(response.status).toBe(201)
  )

const run = (url: string, instance: string) =>
  Effect.gen(function*() {
    const created = yield* http(`${url}/api/runs`, { body: { agent: "desk", instance, message: "how is my account?" } })
    expect(created.status).toBe(202)
    const { runId } = created.json as { readonly runId: string }
    const ended = yield* waitForRun(url, runId)
    const events = (yield* http(`${url}/api/runs/${runId}/events`)).text
    return { ...ended, events }
  })

describe("an installed MCP server's URL in messages", () => {
  it.scopedLive("a secret URL's token in its path is masked where the server quotes the URL back", () =>
    Effect.gen(function*() {
      const crm = crmServer()
      const crmPort = yield* Effect.acquireRelease(listen(crm), () => close(crm))
      const { url } = yield* startServer(yield* tempProject(project), { model })
      yield* install(url, "acme", `http://127.0.0.1:${crmPort}/s/${pathSecret}/mcp`)
      expect(yield* run(url, "acme")).toMatchObject({ status: "completed", output: "done: account in good standing" })
      crm.refuse()
      const refused = yield* run(url, "acme")
      expect(refused.output).toContain("Route POST:/s/<redacted>/mcp not found")
      expect(refused.output).not.toContain(pathSecret)
      expect(refused.events).not.toContain(pathSecret)
      const { texts } = yield* allEvents(url)
      expect(texts.join("\n")).not.toContain(pathSecret)
    }))


  it.scopedLive("a server that is down, or that refuses quoting the URL, is named by its origin: the token is in no error or event", () =>
    Effect.gen(function*() {
      const crm = crmServer()
      const crmPort = yield* Effect.acquireRelease(listen(crm), () => close(crm))
      const downPort = yield* closedPort
      const { url } = yield* startServer(yield* tempProject(project), { model })

      yield* install(url, "down", `http://127.0.0.1:${downPort}/mcp?token=${secret}`)
      const down = yield* run(url, "down")
      expect(down.status).toBe("failed")
      expect(down.error).toContain(`MCP server crm (mcp/crm.ts, installed on instance "down" of agent "desk") could not be reached`)
      expect(down.error).not.toContain(secret)
      expect(down.events).not.toContain(secret)

      // The server quotes the URL it was sent, token and all: the reason shows it without its query.
      yield* install(url, "refused", `http://127.0.0.1:${crmPort}/mcp?token=wrong-${secret}`)
      const refused = yield* run(url, "refused")
      expect(refused.status).toBe("failed")
      expect(refused.error).toContain("could not be reached")
      expect(refused.error).toContain("Route POST:/mcp?<redacted> not found")
      expect(refused.error).not.toContain(secret)
      expect(refused.events).not.toContain(secret)

      const { texts } = yield* allEvents(url)
      expect(texts.join("\n")).not.toContain(secret)
    }))

  it.scopedLive("a server that starts refusing after a good call, quoting the URL, is reported not running without its URL's query", () =>
    Effect.gen(function*() {
      const crm = crmServer()
      const crmPort = yield* Effect.acquireRelease(listen(crm), () => close(crm))
      const { url } = yield* startServer(yield* tempProject(project), { model })
      yield* install(url, "acme", `http://127.0.0.1:${crmPort}/mcp?token=${secret}&tenant=${randomUUID()}`)

      const first = yield* run(url, "acme")
      expect(first).toMatchObject({ status: "completed", output: "done: account in good standing" })
      crm.refuse()

      const second = yield* run(url, "acme")
      expect(second.status).toBe("completed")
      expect(second.output).toContain("MCP server crm is not running")
      expect(second.output).toContain("Route POST:/mcp?<redacted> not found")
      expect(second.output).not.toContain(secret)
      expect(second.events).not.toContain(secret)
      const { texts } = yield* allEvents(url)
      expect(texts.join("\n")).not.toContain(secret)
    }))

  it.scopedLive("a tool's failure that quotes the URL reaches the model, the run and its events without the URL's query", () =>
    Effect.gen(function*() {
      const crm = crmServer()
      const crmPort = yield* Effect.acquireRelease(listen(crm), () => close(crm))
      const { url } = yield* startServer(yield* tempProject(project), { model: namingModel })
      yield* install(url, "acme", `http://127.0.0.1:${crmPort}/mcp?token=${secret}`)

      const created = yield* http(`${url}/api/runs`, { body: { agent: "desk", instance: "acme", message: "refuse crash" } })
      const { runId } = created.json as { readonly runId: string }
      const ended = yield* waitForRun(url, runId)
      expect(ended.status).toBe("completed")
      expect(ended.output).toContain(`refuse on MCP server crm: cannot serve http://127.0.0.1:${crmPort}`)
      expect(ended.output).toContain(`crashed serving http://127.0.0.1:${crmPort}`)
      expect(ended.output).not.toContain(secret)
      const { texts } = yield* allEvents(url)
      expect(texts.join("\n")).toContain("cannot serve")
      expect(texts.join("\n")).not.toContain(secret)
    }))
})
