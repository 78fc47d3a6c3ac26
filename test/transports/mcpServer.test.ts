import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { HttpServer } from "@effect/platform"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { type CallToolResult, CallToolResultSchema, McpError, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { Context, Deferred, Effect, Layer, Stream } from "effect"
import { serverLayer } from "../../src/cli/ProjectRuntime.js"
import { CurrentApp } from "../../src/compiler/CurrentApp.js"
import { loadProject } from "../../src/compiler/loadProject.js"
import * as Scripted from "../../src/models/scripted.js"
import { layerFixed } from "../../src/models/ModelResolverLive.js"
import * as McpSessions from "../../src/transports/mcp/McpSessions.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { agentFile, tempProject, writeFiles } from "../support/tempProject.js"

const lookupTool = `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Look up an order by id",
  input: Schema.Struct({ orderId: Schema.String }),
  output: Schema.String,
  run: ({ orderId }) => Effect.succeed("order " + orderId + " has shipped")
})
`

const transferTool = `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Transfer money (a person approves every transfer)",
  input: Schema.Struct({ amount: Schema.Number }),
  output: Schema.String,
  approval: "always",
  run: ({ amount }) => Effect.succeed("sent " + amount)
})
`

const project = {
  "agents/support/triage/agent.ts": agentFile({
    description: "Answers questions about orders",
    imports: "import lookup from \"./tools/lookup.tool.js\"",
    tools: ["lookup"]
  }),
  "agents/support/triage/tools/lookup.tool.ts": lookupTool,
  "agents/bank/agent.ts": agentFile({
    description: "Moves money",
    imports: "import transfer from \"./tools/transfer.tool.js\"",
    tools: ["transfer"]
  }),
  "agents/bank/tools/transfer.tool.ts": transferTool
}

/**
 * Every agent's model: `look up <id>` calls `lookup`, `transfer <n>` calls `transfer`, `fail` fails
 * the run; anything else is answered with every user message of the conversation so far.
 */
const model = Scripted.make((request, index) => {
  const users = request.messages.flatMap((m) => m._tag === "user" ? [m.content] : [])
  const last = users[users.length - 1] ?? ""
  const toolResults = request.messages.flatMap((m) => m._tag === "tool" ? [m.content] : [])
  if (last === "fail") return { error: { kind: "permanent", message: "the model refused" } }
  if (last === "slow") return { text: "finally", delay: "600 millis" }
  if (last === "slower") return { text: "at last", delay: "2 seconds" }
  if (last.startsWith("look up ")) {
    return index === 0
      ? { toolCalls: [{ name: "lookup", arguments: { orderId: last.slice("look up ".length) } }], delay: "20 millis" }
      : { text: `found: ${toolResults.join(", ")}`, delay: "20 millis" }
  }
  if (last.startsWith("transfer ")) {
    return index === 0 ? { toolCalls: [{ name: "transfer", arguments: { amount: Number(last.slice("transfer ".length)) } }] } : { text: `done: ${toolResults.join(", ")}` }
  }
  return { text: `turn ${users.length}: ${users.join(" / ")}` }
})

/** An MCP client connected to the server's `/mcp`, closed with the scope. */
const connect = (url: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "foundry-test", version: "1.0.0" })
      const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`))
      await client.connect(transport)
      return { client, transport }
    }),
    ({ client }) => Effect.promise(() => client.close())
  )

/** A progress notification as the caller gets it. */
interface Progress {
  readonly message: string
  readonly progress: number
  readonly meta: Record<string, unknown> | undefined
}

/** The `_meta` of a progress notification (the SDK's type of what `onprogress` gets leaves it out). */
const metaOf = (params: object): Record<string, unknown> | undefined =>
  "_meta" in params && typeof params._meta === "object" && params._meta !== null ? Object.fromEntries(Object.entries(params._meta)) : undefined

const call = (
  client: Client,
  name: string,
  args: Record<string, unknown>,
  onprogress?: (progress: Progress) => void,
  options: { readonly timeout?: number; readonly resetTimeoutOnProgress?: boolean } = {}
) =>
  Effect.promise(async (): Promise<CallToolResult> => {
    const result = await client.callTool(
      { name, arguments: args },
      undefined,
      {
        ...options,
        ...(onprogress === undefined ? {} : {
          onprogress: (params) => onprogress({ message: params.message ?? "", progress: params.progress, meta: metaOf(params) })
        })
      }
    )
    return CallToolResultSchema.parse(result)
  })

/** The text blocks of a tool result. */
const texts = (result: CallToolResult) => result.content.flatMap((block) => block.type === "text" ? [block.text] : [])

/** The structured answer of a completed or waiting call. */
interface Answer {
  readonly status: string
  readonly output: string
  readonly conversation: string
  readonly instance: string
  readonly runId: string
  readonly approvalId?: string
}

const answerOf = (result: CallToolResult): Answer => {
  const content = result.structuredContent
  if (content === undefined) return expect.fail(`no structured content in ${JSON.stringify(result)}`)
  return {
    status: String(content.status),
    output: String(content.output),
    conversation: String(content.conversation),
    instance: String(content.instance),
    runId: String(content.runId),
    ...(typeof content.approvalId === "string" ? { approvalId: content.approvalId } : {})
  }
}

describe("Foundry as an MCP server", () => {
  it.scopedLive("lists each agent as a tool named after it, with the message schema", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const server = yield* startServer(root, { model })
      const { client } = yield* connect(server.url)
      const { tools } = yield* Effect.promise(() => client.listTools())
      expect(tools.map((tool) => [tool.name, tool.title])).toEqual([["bank", "bank"], ["support_triage", "support/triage"]])
      const triage = tools.find((tool) => tool.name === "support_triage")
      expect(triage?.description).toContain("Answers questions about orders")
      expect(triage?.inputSchema).toMatchObject({
        type: "object",
        required: ["message"],
        properties: { message: { type: "string" }, conversation: { type: "string" }, instance: { type: "string" } }
      })
      expect(triage?.outputSchema).toMatchObject({ type: "object", properties: { conversation: { type: "string" } } })
    }))

  it.scopedLive("a call answers with the run's output, and its conversation id continues the conversation", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const server = yield* startServer(root, { model })
      const { client } = yield* connect(server.url)
      const first = yield* call(client, "support_triage", { message: "hello" })
      expect(first.isError).toBeFalsy()
      const answer = answerOf(first)
      expect(answer).toMatchObject({ status: "completed", output: "turn 1: hello", instance: "default" })
      expect(texts(first)[0]).toBe("turn 1: hello")
      expect(texts(first)[1]).toContain(answer.conversation)
      const run = yield* http(`${server.url}/api/runs/${answer.runId}`)
      expect(run.json).toMatchObject({ status: "completed", agent: "support/triage", conversationId: answer.conversation })

      const second = yield* call(client, "support_triage", { message: "again", conversation: answer.conversation })
      expect(answerOf(second)).toMatchObject({ status: "completed", output: "turn 2: hello / again", conversation: answer.conversation })
      expect(answerOf(second).runId).not.toBe(answer.runId)
    }))

  it.scopedLive("a conversation passed back alone continues in its own instance, over /mcp and POST /api/runs; another instance is refused", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const server = yield* startServer(root, { model })
      const { client } = yield* connect(server.url)
      const first = answerOf(yield* call(client, "support_triage", { message: "hello", instance: "acme" }))
      expect(first.instance).toBe("acme")

      const second = yield* call(client, "support_triage", { message: "again", conversation: first.conversation })
      expect(texts(second).join("\n")).not.toContain("belongs to")
      expect(answerOf(second)).toMatchObject({ output: "turn 2: hello / again", conversation: first.conversation, instance: "acme" })

      const overHttp = yield* http(`${server.url}/api/runs`, { body: { agent: "support/triage", message: "third", conversation: first.conversation } })
      expect(overHttp.status).toBe(202)
      expect(overHttp.json).toMatchObject({ conversationId: first.conversation, instanceId: "acme" })
      const third = (overHttp.json as { runId: string }).runId
      expect(yield* waitForRun(server.url, third)).toMatchObject({ status: "completed", output: "turn 3: hello / again / third" })
      // Repeated with its idempotency key, it is the same request, answered by the same run.
      const keyed = { body: { agent: "support/triage", message: "fourth", conversation: first.conversation }, headers: { "idempotency-key": "fourth-1" } }
      const once = yield* http(`${server.url}/api/runs`, keyed)
      const twice = yield* http(`${server.url}/api/runs`, keyed)
      expect(twice.status).toBe(202)
      expect(twice.json).toMatchObject({ runId: (once.json as { runId: string }).runId })

      // An instance named that is not the conversation's is refused, as before.
      const other = yield* call(client, "support_triage", { message: "hi", conversation: first.conversation, instance: "default" })
      expect(other.isError).toBe(true)
      expect(texts(other).join("\n")).toContain(`belongs to agent "support/triage", instance "acme"`)
      const otherHttp = yield* http(`${server.url}/api/runs`, {
        body: { agent: "support/triage", message: "hi", conversation: first.conversation, instance: "default" }
      })
      expect(otherHttp.status).toBe(404)
    }))

  it.scopedLive("reports the run's steps as progress notifications while it runs", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const server = yield* startServer(root, { model })
      const { client } = yield* connect(server.url)
      const seen: Array<Progress> = []
      const result = yield* call(client, "support_triage", { message: "look up 42" }, (progress) => seen.push(progress))
      const answer = answerOf(result)
      expect(answer.output).toBe("found: order 42 has shipped")
      // The first names the run, so that a caller that gives up knows which to cancel; each carries its ids.
      expect(seen[0]?.message).toBe(`queued: run ${answer.runId} in conversation ${answer.conversation} (instance default)`)
      for (const { meta } of seen) {
        expect(meta).toMatchObject({ "foundry/runId": answer.runId, "foundry/conversation": answer.conversation, "foundry/instance": "default" })
      }
      expect(seen.map((p) => p.message)).toEqual(expect.arrayContaining(["model turn 1", "calling lookup", "lookup answered", "model turn 2"]))
      expect(seen.map((p) => p.message).indexOf("calling lookup")).toBeLessThan(seen.map((p) => p.message).indexOf("model turn 2"))
      const progress = seen.map((p) => p.progress)
      expect(progress).toEqual([...progress].sort((a, b) => a - b))
      expect(new Set(progress).size).toBe(progress.length)
    }))

  it.scopedLive("while a step takes long, the last step is reported again at the SSE heartbeat's pace: a caller's timeout reset by progress does not fire", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        ...project,
        "foundry.config.ts": `import { defineConfig } from "foundry"\n\nexport default defineConfig({ server: { sseHeartbeat: "300 millis" } })\n`
      })
      const server = yield* startServer(root, { model })
      const { client } = yield* connect(server.url)
      const seen: Array<Progress> = []
      // The model's turn takes 2 seconds, twice the caller's timeout.
      const result = yield* call(client, "support_triage", { message: "slower" }, (progress) => seen.push(progress), {
        timeout: 1_000,
        resetTimeoutOnProgress: true
      })
      expect(answerOf(result).output).toBe("at last")
      const heartbeats = seen.filter((p) => p.message === "still running: model turn 1")
      expect(heartbeats.length).toBeGreaterThanOrEqual(3)

      // A caller that asked for no progress gets none, and its call is answered as before.
      const quiet = yield* call(client, "support_triage", { message: "hello" })
      expect(answerOf(quiet).output).toBe("turn 1: hello")
    }))

  it.scopedLive("failures are tool errors the caller can read", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const server = yield* startServer(root, { model })
      const { client } = yield* connect(server.url)

      const unknownConversation = yield* call(client, "support_triage", { message: "hi", conversation: "conv_missing" })
      expect(unknownConversation.isError).toBe(true)
      expect(texts(unknownConversation).join("\n")).toContain(`there is no conversation "conv_missing"`)

      const failed = yield* call(client, "support_triage", { message: "fail" })
      expect(failed.isError).toBe(true)
      expect(texts(failed)[0]).toMatch(/^The run failed: .*the model refused/)
      expect(texts(failed)[1]).toMatch(/conversation: \S+/)

      const badArguments = yield* call(client, "support_triage", { text: "no message" })
      expect(badArguments.isError).toBe(true)
      expect(texts(badArguments).join("\n")).toContain("message")
      // As the input schema says: a blank message and a field it does not have are refused, and nothing runs.
      const blank = yield* call(client, "support_triage", { message: "   " })
      expect(blank.isError).toBe(true)
      expect(texts(blank).join("\n")).toContain("message: expected text that is not blank")
      const extra = yield* call(client, "support_triage", { message: "hi", foo: 1 })
      expect(extra.isError).toBe(true)
      expect(texts(extra).join("\n")).toContain("foo")
      const runs = (yield* http(`${server.url}/api/runs?agent=support/triage`)).json as ReadonlyArray<{ input: string }>
      expect(runs.map((run) => run.input)).not.toContain("   ")
      expect(runs.map((run) => run.input)).not.toContain("hi")

      const unknownTool = yield* Effect.flip(Effect.tryPromise(() => client.callTool({ name: "nobody", arguments: { message: "hi" } })))
      expect(unknownTool.cause).toBeInstanceOf(McpError)
      expect(String(unknownTool.cause)).toContain(`there is no tool "nobody"`)
      // The client puts "MCP error <code>:" in front once; the server's message does not start with it too.
      expect(String(unknownTool.cause)).not.toMatch(/MCP error -?\d+: MCP error/)
    }))

  it.scopedLive("a run waiting on an approval answers with the approval to decide; the decision finishes the run", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const server = yield* startServer(root, { model })
      const { client } = yield* connect(server.url)
      const result = yield* call(client, "bank", { message: "transfer 5" })
      expect(result.isError).toBeFalsy()
      const answer = answerOf(result)
      expect(answer.status).toBe("awaiting_approval")
      expect(answer.approvalId).toBeDefined()
      expect(texts(result)[0]).toContain(`POST /api/approvals/${answer.approvalId}`)
      const decided = yield* http(`${server.url}/api/approvals/${answer.approvalId}`, { body: { decision: "approve" } })
      expect(decided.status).toBe(200)
      expect(yield* waitForRun(server.url, answer.runId)).toMatchObject({ status: "completed", output: "done: sent 5" })
    }))

  it.scopedLive("conversations are resources: listed, and read as transcripts", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const server = yield* startServer(root, { model })
      const { client } = yield* connect(server.url)
      const { conversation } = answerOf(yield* call(client, "support_triage", { message: "look up 7" }))
      const uri = `foundry://conversations/${conversation}`

      const { resources } = yield* Effect.promise(() => client.listResources())
      expect(resources).toEqual([expect.objectContaining({ uri, mimeType: "text/markdown" })])
      const { resourceTemplates } = yield* Effect.promise(() => client.listResourceTemplates())
      expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(["foundry://conversations/{conversation}"])

      const { contents } = yield* Effect.promise(() => client.readResource({ uri }))
      const text = contents[0] !== undefined && "text" in contents[0] ? contents[0].text : ""
      expect(text).toContain("**User:** look up 7")
      expect(text).toContain("- calls `lookup` with `{\"orderId\":\"7\"}`")
      expect(text).toContain("**Tool `lookup` answered:** order 7 has shipped")
      expect(text).toContain("**Assistant:** found: order 7 has shipped")

      const missing = yield* Effect.flip(Effect.tryPromise(() => client.readResource({ uri: "foundry://conversations/conv_missing" })))
      expect(missing.cause).toMatchObject({ code: -32002 })
      expect(String(missing.cause)).toContain(`there is no conversation "conv_missing"`)
      expect(String(missing.cause)).not.toMatch(/MCP error -?\d+: MCP error/)
    }))

  it.scopedLive("open sessions hear tools/list_changed when a reload changes the agents", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const app = yield* loadProject(root, 1)
      const storeFile = join(mkdtempSync(join(tmpdir(), "foundry-store-")), "foundry.db")
      const context = yield* Layer.build(serverLayer(app, { port: 0, host: "127.0.0.1" }, { storeFile, models: layerFixed(model) }))
      const address = Context.get(context, HttpServer.HttpServer).address
      const url = `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`
      const { client } = yield* connect(url)
      const changed = yield* Deferred.make<void>()
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => Effect.runPromise(Deferred.complete(changed, Effect.void)).then(() => undefined))
      expect((yield* Effect.promise(() => client.listTools())).tools.map((t) => t.name)).toEqual(["bank", "support_triage"])

      writeFiles(root, { "agents/greeter/agent.ts": agentFile({ description: "Says hello" }) })
      const reloaded = yield* loadProject(root, 2)
      yield* Effect.flatMap(Effect.provide(CurrentApp, context), (current) => current.set(reloaded))
      yield* Deferred.await(changed).pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("no tools/list_changed") }))
      expect((yield* Effect.promise(() => client.listTools())).tools.map((t) => t.name)).toEqual(["bank", "greeter", "support_triage"])
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scopedLive("a session ends with DELETE; a request without a session is served statelessly", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const server = yield* startServer(root, { model })
      const { transport } = yield* connect(server.url)
      const sessionId = transport.sessionId ?? expect.fail("the server named no session")
      yield* Effect.promise(() => transport.terminateSession())
      const headers = { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18" }
      const ended = yield* http(`${server.url}/mcp`, {
        body: { jsonrpc: "2.0", id: 1, method: "tools/list" },
        headers: { ...headers, "mcp-session-id": sessionId }
      })
      expect(ended.status).toBe(404)
      expect(ended.json).toMatchObject({ jsonrpc: "2.0", error: { code: -32001 } })
      // Params that are wrong too: the ended session is what the client must hear first, to initialize again.
      for (const body of [
        { jsonrpc: "2.0", id: 14, method: "tools/call", params: { name: "support_triage", arguments: [] } },
        [{ jsonrpc: "2.0", id: 15, method: "tools/call", params: { arguments: {} } }]
      ]) {
        const endedAndWrong = yield* http(`${server.url}/mcp`, { body, headers: { ...headers, "mcp-session-id": sessionId } })
        expect(endedAndWrong.status).toBe(404)
        expect(endedAndWrong.json).toMatchObject({ jsonrpc: "2.0", error: { code: -32001 } })
      }

      const stateless = yield* http(`${server.url}/mcp`, { body: { jsonrpc: "2.0", id: 2, method: "tools/list" }, headers })
      expect(stateless.status).toBe(200)
      expect(stateless.headers.get("mcp-session-id")).toBeNull()
      expect(stateless.text).toContain("\"support_triage\"")

      const notJson = yield* http(`${server.url}/mcp`, { body: "{ not json", headers })
      expect(notJson.status).toBe(400)
      expect(notJson.json).toMatchObject({ jsonrpc: "2.0", error: { code: -32700 } })
      // JSON that is no JSON-RPC message is an Invalid Request saying what is wrong, to its id.
      const notMessage = yield* http(`${server.url}/mcp`, { body: { jsonrpc: "1.0", id: 13, method: "tools/list" }, headers })
      expect(notMessage.status).toBe(400)
      expect(notMessage.json).toEqual({ jsonrpc: "2.0", id: 13, error: { code: -32600, message: `Invalid Request: "jsonrpc" must be "2.0", got "1.0"` } })
      const notObject = yield* http(`${server.url}/mcp`, { body: 42, headers })
      expect(notObject.json).toMatchObject({ id: null, error: { code: -32600, message: "Invalid Request: expected a JSON-RPC message (an object), got a number" } })

      // Params a method served cannot have are invalid params, said in words, to the request's id.
      const initialize = { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "test", version: "1" } }
      for (const [id, method, params, said] of [
        [3, "tools/call", undefined, "expected params"],
        [4, "tools/call", { name: "support_triage", arguments: "str" }, "params.arguments: expected an object of the tool's arguments, got string"],
        [5, "tools/call", { arguments: {} }, "params.name: expected the name of a tool"],
        [6, "tools/list", { cursor: 5 }, "params.cursor: expected the nextCursor (a string) of the page before, got a number"],
        [7, "resources/list", { cursor: null }, "params.cursor: expected the nextCursor (a string) of the page before, got null"],
        [8, "initialize", { protocolVersion: 5 }, "params.protocolVersion: expected string, got number; params.capabilities: expected object"],
        [9, "initialize", { ...initialize, capabilities: { roots: true } }, "params.capabilities.roots: expected object, got boolean"],
        [10, "ping", "now", "expected params {} or none, got a string"],
        [11, "resources/templates/list", { _meta: { progressToken: true } }, "params._meta.progressToken: expected a string or a number"],
        [12, "tools/call", { name: "support_triage", arguments: {}, task: 5 }, "params.task: expected object, got number"]
      ] as const) {
        const wrong = yield* http(`${server.url}/mcp`, { body: { jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) }, headers })
        expect(wrong.json).toMatchObject({ jsonrpc: "2.0", id, error: { code: -32602, message: expect.stringContaining(said) } })
        // Not the SDK schema's dump (`[ { "expected": "record", ... } ]`).
        expect(wrong.text).not.toContain("invalid_type")
      }

      const noSession = yield* http(`${server.url}/mcp`, { method: "GET", headers })
      expect(noSession.status).toBe(400)
      expect(noSession.json).toMatchObject({ jsonrpc: "2.0", error: { code: -32000 } })
    }))

  it.scopedLive("a batch: each request whose params are wrong gets the invalid params answer it gets alone, and the others are served", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const server = yield* startServer(root, { model })
      const headers = { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-03-26" }
      const post = (body: unknown, more: Record<string, string> = {}) => http(`${server.url}/mcp`, { body, headers: { ...headers, ...more } })
      /** The JSON-RPC messages of an answer: its SSE events' data, or its JSON. */
      const messagesOf = (answer: { readonly text: string; readonly json: unknown }): ReadonlyArray<unknown> =>
        answer.json !== undefined
          ? [answer.json].flat()
          : answer.text.split("\n").filter((line) => line.startsWith("data: ")).map((line): unknown => JSON.parse(line.slice("data: ".length)))
      const wrongCall = { jsonrpc: "2.0", id: "call", method: "tools/call", params: { name: "support_triage", arguments: "str" } }
      const wrongList = { jsonrpc: "2.0", id: 7, method: "tools/list", params: { cursor: 5 } }
      const list = { jsonrpc: "2.0", id: 8, method: "tools/list" }
      const alone = [messagesOf(yield* post(wrongCall))[0], messagesOf(yield* post(wrongList))[0]]
      expect(alone).toEqual([
        { jsonrpc: "2.0", id: "call", error: { code: -32602, message: expect.stringContaining("params.arguments: expected an object") } },
        { jsonrpc: "2.0", id: 7, error: { code: -32602, message: expect.stringContaining("params.cursor: expected the nextCursor") } }
      ])

      // Stateless, and in a session of 2025-03-26 (later versions have no batches, mcpServerBatches.test.ts):
      // the wrong ones answered as alone, the good one served.
      const opened = yield* post({
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
      })
      const sessionId = opened.headers.get("mcp-session-id") ?? expect.fail("the server named no session")
      const stateless: Record<string, string> = {}
      for (const more of [stateless, { "mcp-session-id": sessionId }]) {
        const mixed = yield* post([wrongCall, list, wrongList], more)
        expect(mixed.status).toBe(200)
        const answers = messagesOf(mixed)
        expect(answers).toHaveLength(3)
        expect(answers).toEqual(expect.arrayContaining([
          ...alone,
          { jsonrpc: "2.0", id: 8, result: expect.objectContaining({ tools: expect.arrayContaining([expect.objectContaining({ name: "support_triage" })]) }) }
        ]))
        expect(mixed.text).not.toContain("invalid_type")
      }

      // Nothing left to serve but a notification: the answers are the response.
      const onlyWrong = yield* post([wrongCall, { jsonrpc: "2.0", method: "notifications/initialized" }, wrongList])
      expect(onlyWrong.status).toBe(200)
      expect(onlyWrong.json).toEqual(alone)
    }))

  it.scopedLive("a call the client cancels stops waiting, and its durable run goes on", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const server = yield* startServer(root, { model })
      const { client } = yield* connect(server.url)
      const controller = new AbortController()
      const called = Effect.promise(() =>
        client.callTool({ name: "support_triage", arguments: { message: "slow" } }, undefined, { signal: controller.signal }).then(
          () => "answered",
          () => "aborted"
        )
      )
      const outcome = yield* Effect.fork(called)
      yield* Effect.sleep("150 millis")
      controller.abort("changed my mind")
      expect(yield* outcome.await.pipe(Effect.flatten)).toBe("aborted")
      const runs = (yield* http(`${server.url}/api/runs?agent=support/triage`)).json
      const runId = Array.isArray(runs) && typeof runs[0] === "object" && runs[0] !== null && "id" in runs[0] ? String(runs[0].id) : ""
      expect(yield* waitForRun(server.url, runId)).toMatchObject({ status: "completed", output: "finally" })
    }))
})

describe("MCP sessions", () => {
  const initialize = () =>
    new Request("http://127.0.0.1/mcp", {
      method: "POST",
      headers: { accept: "application/json, text/event-stream", "content-type": "application/json" }
    })
  const initializeBody = (id: number) => ({
    jsonrpc: "2.0",
    id,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "test", version: "1" } }
  })
  const listTools = (sessionId: string) =>
    new Request("http://127.0.0.1/mcp", {
      method: "POST",
      headers: {
        accept: "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-session-id": sessionId,
        "mcp-protocol-version": "2025-06-18"
      }
    })
  it.scopedLive("an idle session is ended; at maxSessions the one idle the longest makes room, and only busy ones refuse a new one", () =>
    Effect.gen(function*() {
      const checked: Array<number> = []
      const sessions = yield* McpSessions.make({
        newServer: () => new Server({ name: "test", version: "1" }, { capabilities: {} }),
        sessionIdle: "150 millis",
        maxSessions: 1,
        checkEvery: "50 millis",
        keepAlive: "15 seconds",
        onCheck: (servers) => Effect.sync(() => void checked.push(servers.length))
      })
      const opened = (id: number) =>
        Effect.gen(function*() {
          const response = yield* sessions.handle(initialize(), initializeBody(id))
          expect(response.status).toBe(200)
          // Read to its end, as a client does: a session with a response still being sent is not idle.
          if (response.body._tag === "Stream") yield* Stream.runDrain(response.body.stream)
          return response.headers["mcp-session-id"] ?? expect.fail("no session id")
        })
      const first = yield* opened(1)
      yield* Effect.sleep("400 millis")
      expect(checked).toContain(1)
      const afterIdle = yield* sessions.handle(listTools(first), { jsonrpc: "2.0", id: 3, method: "tools/list" })
      expect(afterIdle.status).toBe(404)

      // Full, with an idle session: it is ended for the new one.
      const second = yield* opened(4)
      const third = yield* opened(5)
      expect((yield* sessions.handle(listTools(second), { jsonrpc: "2.0", id: 6, method: "tools/list" })).status).toBe(404)

      // Full, with a session whose stream is open: the new one is refused.
      const stream = yield* sessions.handle(
        new Request("http://127.0.0.1/mcp", {
          method: "GET",
          headers: { accept: "text/event-stream", "mcp-session-id": third, "mcp-protocol-version": "2025-06-18" }
        }),
        undefined
      )
      expect(stream.status).toBe(200)
      const refused = yield* sessions.handle(initialize(), initializeBody(7))
      expect(refused.status).toBe(503)
    }))

  it.scopedLive("initializes at the same moment open no more sessions than allowed: those past it are refused", () =>
    Effect.gen(function*() {
      const sessions = yield* McpSessions.make({
        newServer: () => new Server({ name: "test", version: "1" }, { capabilities: {} }),
        sessionIdle: "1 minute",
        maxSessions: 2,
        checkEvery: "1 minute",
        keepAlive: "15 seconds",
        onCheck: () => Effect.void
      })
      const answers = yield* Effect.forEach(
        Array.from({ length: 6 }, (_, index) => index),
        (index) => sessions.handle(initialize(), initializeBody(index)),
        { concurrency: "unbounded" }
      )
      const opened = answers.flatMap((answer) => answer.status === 200 ? [answer.headers["mcp-session-id"] ?? ""] : [])
      expect(answers.map((answer) => answer.status).filter((status) => status !== 200)).toEqual([503, 503, 503, 503])
      // Each one answered is a session that is open.
      for (const sessionId of opened) expect((yield* sessions.handle(listTools(sessionId), { jsonrpc: "2.0", id: 9, method: "tools/list" })).status).toBe(200)
    }))

  it.scopedLive("initializes at the same moment on a full server: one takes the idle session's place, the others are refused", () =>
    Effect.gen(function*() {
      const sessions = yield* McpSessions.make({
        newServer: () => new Server({ name: "test", version: "1" }, { capabilities: {} }),
        sessionIdle: "1 minute",
        maxSessions: 1,
        checkEvery: "1 minute",
        keepAlive: "15 seconds",
        onCheck: () => Effect.void
      })
      const idle = yield* sessions.handle(initialize(), initializeBody(0))
      if (idle.body._tag === "Stream") yield* Stream.runDrain(idle.body.stream)
      const answers = yield* Effect.forEach([1, 2, 3], (id) => sessions.handle(initialize(), initializeBody(id)), { concurrency: "unbounded" })
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 503, 503])
    }))
})
