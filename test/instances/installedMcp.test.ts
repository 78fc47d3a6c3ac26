/**
 * Capabilities installed per instance, through a real project served over HTTP: two instances of
 * one agent install the catalogue MCP server `mcp/crm.ts`, each pointing at its own Streamable
 * HTTP server (written with the MCP SDK below, each requiring its own bearer token), and an
 * installable shared tool is installed and uninstalled between runs.
 */
import { randomUUID } from "node:crypto"
import { createServer } from "node:http"
import { describe, expect, it } from "@effect/vitest"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { CallToolRequestSchema, ListToolsRequestSchema, type Tool } from "@modelcontextprotocol/sdk/types.js"
import { type Duration, Effect, Schema } from "effect"
import { FoundryEvent } from "../../src/events/FoundryEvent.js"
import * as Scripted from "../../src/models/scripted.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

/** A CRM server's tool: its name, and the answer it gives for its arguments. */
interface CrmTool {
  readonly tool: Tool
  readonly answer: (args: Record<string, unknown>) => string
}

/** What a CRM server saw. */
interface CrmServer {
  readonly url: string
  /** The `authorization` header of every request. */
  readonly authorizations: Array<string>
  readonly calls: Array<string>
  /** Sessions as they were initialized, and as clients deleted them. */
  readonly opened: Array<string>
  readonly closed: Array<string>
}

/**
 * A stateful Streamable HTTP MCP server on loopback that answers only `Bearer <token>` (401 for
 * anything else) and names its tenant in every answer, so a result shows whose credentials reached it.
 */
const startCrm = (token: string, tenant: string, crmTool: CrmTool) =>
  Effect.acquireRelease(
    Effect.async<CrmServer & { readonly stop: () => void }>((resume) => {
      const seen: CrmServer = { url: "", authorizations: [], calls: [], opened: [], closed: [] }
      const sessions = new Map<string, StreamableHTTPServerTransport>()
      const server = createServer((request, response) => {
        seen.authorizations.push(request.headers.authorization ?? "")
        if (request.headers.authorization !== `Bearer ${token}`) {
          response.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: "unknown token" }))
          return
        }
        const sessionId = request.headers["mcp-session-id"]
        const known = typeof sessionId === "string" ? sessions.get(sessionId) : undefined
        if (known !== undefined) {
          void known.handleRequest(request, response)
          return
        }
        const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => {
            sessions.set(id, transport)
            seen.opened.push(id)
          },
          onsessionclosed: (id) => {
            sessions.delete(id)
            seen.closed.push(id)
          }
        })
        const mcp = new Server({ name: `crm-${tenant}`, version: "1.0.0" }, { capabilities: { tools: {} } })
        mcp.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [crmTool.tool] }))
        mcp.setRequestHandler(CallToolRequestSchema, (call) => {
          seen.calls.push(call.params.name)
          return { content: [{ type: "text", text: `${crmTool.answer(call.params.arguments ?? {})} (tenant ${tenant})` }] }
        })
        void mcp.connect(transport).then(() => transport.handleRequest(request, response))
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resume(Effect.succeed(Object.assign(seen, {
          url: `http://127.0.0.1:${port}/mcp`,
          stop: () => {
            server.closeAllConnections()
            server.close()
          }
        })))
      })
    }),
    (crm) => Effect.sync(() => crm.stop())
  )

const lookupAccount: CrmTool = {
  tool: {
    name: "lookup_account",
    description: "Look up a customer account",
    inputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] }
  },
  answer: (args) => `account ${String(args.id)} is in good standing`
}

const createTicket: CrmTool = {
  tool: {
    name: "create_ticket",
    description: "Open a support ticket",
    inputSchema: { type: "object", properties: { title: { type: "string" } }, required: ["title"] }
  },
  answer: (args) => `ticket opened: ${String(args.title)}`
}

const project = {
  "agents/desk/agent.ts": `import { defineAgent } from "foundry"

export default defineAgent({
  description: "The help desk",
  instructions: "Help the customer.",
  maxTurns: 4
})
`,
  "mcp/crm.ts": `import { Redacted, Schema } from "effect"
import { defineMcpServer } from "foundry"

export default defineMcpServer({
  description: "The customer's CRM",
  installable: { config: Schema.Struct({ url: Schema.String, token: Schema.Redacted(Schema.String) }) },
  connect: (c) => ({ url: c.url, headers: { authorization: \`Bearer \${Redacted.value(c.token)}\` } })
})
`,
  "mcp/vault.ts": `import { Redacted, Schema } from "effect"
import { defineMcpServer } from "foundry"

export default defineMcpServer({
  description: "A vault whose connect throws, quoting its token",
  installable: { config: Schema.Struct({ token: Schema.Redacted(Schema.String) }) },
  connect: (c) => { throw new Error("no vault for " + Redacted.value(c.token)) }
})
`,
  "tools/notes.tool.ts": `import { Effect, Redacted, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Save a note in the customer's notebook",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  installable: { config: Schema.Struct({ notebook: Schema.String, key: Schema.Redacted(Schema.String) }) },
  run: ({ text }, { config, instance }) =>
    Effect.succeed("saved " + text + " in " + config.notebook + " of " + instance.id + " with a key ending " + Redacted.value(config.key).slice(-4))
})
`
}

/** A run's message: a label that tells runs apart, and the tool calls of its first turn. */
const message = (label: string, ...calls: ReadonlyArray<{ readonly name: string; readonly arguments: unknown }>) =>
  JSON.stringify({ label, calls })

interface Script {
  readonly label: string
  readonly calls: ReadonlyArray<{ readonly name: string; readonly arguments: unknown }>
}

const isScript = (value: unknown): value is Script => typeof value === "object" && value !== null && "calls" in value

/** A model that makes its message's calls, then answers `done: <results>`; `offered` keeps the tool names it saw, by label. */
const deskModel = () => {
  const offered = new Map<string, ReadonlyArray<string>>()
  const model = Scripted.make((request, index) => {
    const users = request.messages.filter((m) => m._tag === "user")
    const last = users[users.length - 1]
    const parsed: unknown = JSON.parse(last?.content ?? "{}")
    const script: Script = isScript(parsed) ? parsed : { label: "", calls: [] }
    if (!offered.has(script.label)) offered.set(script.label, request.tools.map((tool) => tool.name))
    if (index === 0 && script.calls.length > 0) return { toolCalls: script.calls, text: "" }
    const results = request.messages.slice(last === undefined ? 0 : request.messages.lastIndexOf(last)).flatMap((m) => m._tag === "tool" ? [m.content] : [])
    return { text: `done: ${results.join(" | ")}` }
  }, "desk")
  return { model, offered }
}

const run = (url: string, instance: string, text: string) =>
  Effect.gen(function*() {
    const created = yield* http(`${url}/api/runs`, { body: { agent: "desk", instance, message: text } })
    expect(created.status).toBe(202)
    const { runId } = created.json as { readonly runId: string }
    const ended = yield* waitForRun(url, runId)
    const events = (yield* http(`${url}/api/runs/${runId}/events`)).text
    return { ...ended, events }
  })

const createInstance = (url: string, id: string, installations: ReadonlyArray<unknown> = []) =>
  Effect.map(http(`${url}/api/instances`, { body: { agent: "desk", id, installations } }), (response) => {
    expect(response.status).toBe(201)
  })

/** Polls until `check` holds. */
const eventually = (what: string, check: () => boolean) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 400; attempt++) {
      if (check()) return
      yield* Effect.sleep("25 millis")
    }
    return yield* Effect.die(new Error(`never happened: ${what}`))
  })

const tokenA = `token-a-${randomUUID()}`
const tokenB = `token-b-${randomUUID()}`

/** Both CRM servers and the project, served with the desk model; acme installs server A, globex server B. */
const setup = (options: { readonly idleTimeout?: Duration.DurationInput } = {}) =>
  Effect.gen(function*() {
    const crmA = yield* startCrm(tokenA, "acme", lookupAccount)
    const crmB = yield* startCrm(tokenB, "globex", createTicket)
    const root = yield* tempProject(project)
    const { model, offered } = deskModel()
    const { url } = yield* startServer(root, { model, ...(options.idleTimeout === undefined ? {} : { mcp: { idleTimeout: options.idleTimeout } }) })
    yield* createInstance(url, "acme", [{ kind: "mcp", id: "crm", config: { url: crmA.url, token: tokenA } }])
    yield* createInstance(url, "globex", [{ kind: "mcp", id: "crm", config: { url: crmB.url, token: tokenB } }])
    return { url, crmA, crmB, offered }
  })

describe("capabilities installed per instance", () => {
  it.scopedLive("two instances of one agent each see only their own MCP server's tools, reached with their own token", () =>
    Effect.gen(function*() {
      const { crmA, crmB, offered, url } = yield* setup()

      const acme = yield* run(url, "acme", message("acme", { name: "crm__lookup_account", arguments: { id: "42" } }))
      expect(acme).toMatchObject({ status: "completed", output: "done: account 42 is in good standing (tenant acme)" })
      expect(offered.get("acme")).toContain("crm__lookup_account")
      expect(offered.get("acme")).not.toContain("crm__create_ticket")

      const globex = yield* run(url, "globex", message(
        "globex",
        { name: "crm__create_ticket", arguments: { title: "printer on fire" } },
        { name: "crm__lookup_account", arguments: { id: "42" } }
      ))
      expect(globex.status).toBe("completed")
      expect(globex.output).toContain("ticket opened: printer on fire (tenant globex)")
      expect(globex.output).toContain(`there is no tool named "crm__lookup_account"`)
      expect(offered.get("globex")).toContain("crm__create_ticket")
      expect(offered.get("globex")).not.toContain("crm__lookup_account")

      // Each server was only ever sent its own instance's token, and got only its own instance's calls.
      expect(new Set(crmA.authorizations)).toEqual(new Set([`Bearer ${tokenA}`]))
      expect(new Set(crmB.authorizations)).toEqual(new Set([`Bearer ${tokenB}`]))
      expect(crmA.calls).toEqual(["lookup_account"])
      expect(crmB.calls).toEqual(["create_ticket"])
      // The tokens are in no event of either run.
      for (const events of [acme.events, globex.events]) {
        expect(events).not.toContain(tokenA)
        expect(events).not.toContain(tokenB)
      }
    }))

  it.scopedLive("an installed shared tool is offered from the next run on with its config, and is gone after uninstalling", () =>
    Effect.gen(function*() {
      const { offered, url } = yield* setup()
      const note = { name: "notes", arguments: { text: "call back" } }

      const before = yield* run(url, "acme", message("before", note))
      expect(offered.get("before")).not.toContain("notes")
      expect(before.output).toContain(`there is no tool named "notes"`)

      const installed = yield* http(`${url}/api/instances/acme/installations?agent=desk`, {
        body: { kind: "tool", id: "notes", config: { notebook: "acme-book", key: "secret-key-7781" } }
      })
      expect(installed.status).toBe(201)
      const during = yield* run(url, "acme", message("during", note))
      expect(offered.get("during")).toContain("notes")
      expect(during.output).toBe("done: saved call back in acme-book of acme with a key ending 7781")
      // Installed on acme only.
      yield* run(url, "globex", message("globex", note))
      expect(offered.get("globex")).not.toContain("notes")

      const removed = yield* http(`${url}/api/instances/acme/installations?agent=desk&kind=tool&capability=notes`, { method: "DELETE" })
      expect(removed.status).toBe(204)
      const after = yield* run(url, "acme", message("after", note))
      expect(offered.get("after")).not.toContain("notes")
      expect(after.output).toContain(`there is no tool named "notes"`)
    }))

  it.scopedLive("an instance's connection is closed (its session deleted) once idle, and the next run connects again", () =>
    Effect.gen(function*() {
      const { crmA, url } = yield* setup({ idleTimeout: "300 millis" })
      const lookup = { name: "crm__lookup_account", arguments: { id: "7" } }
      expect((yield* run(url, "acme", message("first", lookup))).output).toBe("done: account 7 is in good standing (tenant acme)")
      expect(crmA.opened).toHaveLength(1)

      yield* eventually("the idle session was deleted", () => crmA.closed.length === 1)
      expect(crmA.closed).toEqual(crmA.opened)

      expect((yield* run(url, "acme", message("second", lookup))).output).toBe("done: account 7 is in good standing (tenant acme)")
      expect(crmA.opened).toHaveLength(2)
      expect(crmA.opened[1]).not.toBe(crmA.opened[0])
    }))

  it.scopedLive("an installed MCP server that refuses the token fails that instance's run with a readable error; other instances go on", () =>
    Effect.gen(function*() {
      const { crmA, url } = yield* setup()
      const wrong = `wrong-${randomUUID()}`
      yield* createInstance(url, "initech", [{ kind: "mcp", id: "crm", config: { url: crmA.url, token: wrong } }])

      const refused = yield* run(url, "initech", message("initech", { name: "crm__lookup_account", arguments: { id: "1" } }))
      expect(refused.status).toBe("failed")
      expect(refused.error).toContain(`MCP server crm (mcp/crm.ts, installed on instance "initech" of agent "desk") could not be reached`)
      expect(refused.error).toContain("the server refused the credentials (HTTP 401)")
      expect(refused.error).not.toContain(wrong)
      expect(refused.events).not.toContain(wrong)

      const acme = yield* run(url, "acme", message("acme", { name: "crm__lookup_account", arguments: { id: "2" } }))
      expect(acme.output).toBe("done: account 2 is in good standing (tenant acme)")
    }))

  it.scopedLive("an installation that makes no valid server is left out of the instance's runs, which say so in an event and go on with the rest", () =>
    Effect.gen(function*() {
      const { offered, url } = yield* setup()
      yield* createInstance(url, "hooli", [
        { kind: "mcp", id: "crm", config: { url: "crm.internal:8080", token: "t" } },
        { kind: "mcp", id: "vault", config: { token: "vault-secret-5521" } },
        { kind: "tool", id: "notes", config: { notebook: "hooli-book", key: "key-0042" } }
      ])
      const done = yield* run(url, "hooli", message("hooli", { name: "notes", arguments: { text: "hi" } }))
      expect(done).toMatchObject({ status: "completed", output: "done: saved hi in hooli-book of hooli with a key ending 0042" })
      expect(offered.get("hooli")?.filter((name) => name.startsWith("crm__"))).toEqual([])
      // The run says which installation it left out, and why: not only the log.
      const skipped = Schema.decodeUnknownSync(Schema.parseJson(Schema.Array(FoundryEvent)))(done.events).filter((event) => event.type === "installation.skipped")
      expect(skipped).toEqual([
        expect.objectContaining({
          type: "installation.skipped",
          data: { kind: "mcp", capability: "crm", reason: expect.stringContaining("connect(config) in mcp/crm.ts made no valid MCP server") }
        }),
        expect.objectContaining({
          type: "installation.skipped",
          data: { kind: "mcp", capability: "vault", reason: "connect(config) in mcp/vault.ts threw (its message, which may hold the config's secrets, is in the log)" }
        })
      ])
      expect(done.events).not.toContain("vault-secret-5521")
    }))
})
