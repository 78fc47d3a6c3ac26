import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import * as Scripted from "../../src/models/scripted.js"
import { http, startServer } from "../support/server.js"
import { agentFile, tempProject } from "../support/tempProject.js"

const project = { "agents/helper/agent.ts": agentFile({ description: "Helps" }) }
const model = Scripted.make(() => ({ text: "hello" }))

const accept = "application/json, text/event-stream"

/** The JSON-RPC messages of an answer: its SSE events' data, or its JSON. */
const messagesOf = (answer: { readonly text: string; readonly json: unknown }): ReadonlyArray<unknown> =>
  answer.json !== undefined
    ? [answer.json].flat()
    : answer.text.split("\n").filter((line) => line.startsWith("data: ")).map((line): unknown => JSON.parse(line.slice("data: ".length)))

/** A session opened with a raw initialize asking for `protocolVersion`; its id. */
const openSession = (url: string, protocolVersion: string) =>
  Effect.gen(function*() {
    const opened = yield* http(`${url}/mcp`, {
      body: { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion, capabilities: {}, clientInfo: { name: "raw", version: "1" } } },
      headers: { accept }
    })
    expect(opened.status).toBe(200)
    expect(opened.text).toContain(`"protocolVersion":"${protocolVersion}"`)
    return opened.headers.get("mcp-session-id") ?? expect.fail("the server named no session")
  })

const removed = {
  jsonrpc: "2.0",
  id: null,
  error: { code: -32600, message: expect.stringMatching(/batches were removed from MCP in 2025-06-18.*one at a time/) }
}

describe("/mcp JSON-RPC batches", () => {
  it.scopedLive("each malformed element gets its own Invalid Request answer, the valid ones are served; an empty batch is one error", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const server = yield* startServer(root, { model })
      const post = (body: unknown, headers: Record<string, string>) => http(`${server.url}/mcp`, { body, headers: { accept, ...headers } })

      const batch = [
        1,
        { jsonrpc: "1.0", id: "old", method: "ping" },
        { jsonrpc: "2.0", id: 3, method: 5 },
        { jsonrpc: "2.0", id: { not: "an id" }, method: "ping" },
        { jsonrpc: "2.0", id: 4, method: "tools/list" },
        { jsonrpc: "2.0", id: "wrong-params", method: "tools/list", params: { cursor: 5 } },
        { jsonrpc: "2.0", id: 5, method: "ping" }
      ]
      const invalid = (id: string | number | null, said: string) => ({
        jsonrpc: "2.0",
        id,
        error: { code: -32600, message: expect.stringContaining(said) }
      })
      const oldSession = yield* openSession(server.url, "2025-03-26")
      // Stateless without a version (the SDK's default, 2025-03-26), with an old one, and on a session of 2025-03-26.
      const sent: ReadonlyArray<Record<string, string>> = [{}, { "mcp-protocol-version": "2024-11-05" }, { "mcp-session-id": oldSession }]
      for (const headers of sent) {
        const answer = yield* post(batch, headers)
        expect(answer.status).toBe(200)
        const answers = messagesOf(answer)
        expect(answers).toHaveLength(7)
        expect(answers).toEqual(expect.arrayContaining([
          invalid(null, "element 0 of the batch: expected a JSON-RPC message (an object), got a number"),
          invalid("old", `element 1 of the batch: "jsonrpc" must be "2.0", got "1.0"`),
          invalid(3, `element 2 of the batch: "method" must be a string, got a number`),
          invalid(null, `element 3 of the batch: "id" must be a string or an integer, got an object`),
          { jsonrpc: "2.0", id: 4, result: expect.objectContaining({ tools: [expect.objectContaining({ name: "helper" })] }) },
          { jsonrpc: "2.0", id: "wrong-params", error: { code: -32602, message: expect.stringContaining("params.cursor") } },
          { jsonrpc: "2.0", id: 5, result: {} }
        ]))
      }

      // Nothing valid: the answers are the response, one to each element, as a bad request.
      const allWrong = yield* post([7, "ping", null], {})
      expect(allWrong.status).toBe(400)
      expect(allWrong.json).toEqual([
        invalid(null, "element 0 of the batch"),
        invalid(null, "got a string"),
        invalid(null, "got null")
      ])

      // An empty batch: one error, not an array of them.
      const empty = yield* post([], {})
      expect(empty.status).toBe(400)
      expect(empty.json).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32600, message: expect.stringContaining("the batch is empty") } })
    }))

  it.scopedLive("from 2025-06-18 a batch is refused whole, saying batches were removed, by the header or by the session's version", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const server = yield* startServer(root, { model })
      const post = (body: unknown, headers: Record<string, string>) => http(`${server.url}/mcp`, { body, headers: { accept, ...headers } })
      const pings = [{ jsonrpc: "2.0", id: 1, method: "ping" }, { jsonrpc: "2.0", id: 2, method: "ping" }]

      for (const version of ["2025-06-18", "2025-11-25"]) {
        const refused = yield* post(pings, { "mcp-protocol-version": version })
        expect(refused.status).toBe(400)
        expect(refused.json).toEqual(removed)
        expect(refused.text).toContain(version)
      }
      // A session of 2025-06-18 refuses a batch even when the header is left out or says an older version.
      const session = yield* openSession(server.url, "2025-06-18")
      const sent: ReadonlyArray<Record<string, string>> = [{ "mcp-session-id": session }, { "mcp-session-id": session, "mcp-protocol-version": "2025-03-26" }]
      for (const headers of sent) {
        const refused = yield* post(pings, headers)
        expect(refused.status).toBe(400)
        expect(refused.json).toEqual(removed)
      }
      // The same requests one at a time are served.
      const alone = yield* post(pings[0], { "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" })
      expect(messagesOf(alone)).toEqual([{ jsonrpc: "2.0", id: 1, result: {} }])
    }))

  it.scopedLive("the MCP SDK's client: a batch on a session of the latest version is refused in words; under 2025-03-26 each request is answered", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const server = yield* startServer(root, { model })
      const url = new URL(`${server.url}/mcp`)
      const pings: Array<JSONRPCMessage> = [{ jsonrpc: "2.0", id: 101, method: "ping" }, { jsonrpc: "2.0", id: 102, method: "ping" }]

      const latest = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const client = new Client({ name: "foundry-test", version: "1.0.0" })
          const transport = new StreamableHTTPClientTransport(url)
          await client.connect(transport)
          return { client, transport }
        }),
        ({ client }) => Effect.promise(() => client.close())
      )
      const refusal = yield* Effect.promise(() => latest.transport.send(pings).then(() => "sent", (error: unknown) => String(error)))
      expect(refusal).toMatch(/-32600.*batches were removed from MCP in 2025-06-18.*send the requests one at a time/)
      // The session goes on, one request at a time.
      const listed = yield* Effect.promise(() => latest.client.listTools())
      expect(listed.tools.map((tool) => tool.name)).toEqual(["helper"])

      // The SDK's transport on a session agreed at 2025-03-26, which has batches.
      const received: Array<JSONRPCMessage> = []
      let arrived = (): void => {}
      const old = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const transport = new StreamableHTTPClientTransport(url)
          transport.onmessage = (message) => {
            received.push(message)
            arrived()
          }
          await transport.start()
          return transport
        }),
        (transport) => Effect.promise(() => transport.terminateSession().then(() => transport.close()))
      )
      const answers = (count: number) =>
        Effect.promise(() =>
          new Promise<ReadonlyArray<JSONRPCMessage>>((resolve) => {
            arrived = () => {
              if (received.length >= count) resolve(received.splice(0, received.length))
            }
            arrived()
          })
        ).pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error(`fewer than ${count} answers: ${JSON.stringify(received)}`) }))

      yield* Effect.promise(() =>
        old.send({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "old", version: "1" } }
        })
      )
      expect(yield* answers(1)).toEqual([expect.objectContaining({ id: 1, result: expect.objectContaining({ protocolVersion: "2025-03-26" }) })])
      old.setProtocolVersion("2025-03-26")
      yield* Effect.promise(() => old.send({ jsonrpc: "2.0", method: "notifications/initialized" }))
      yield* Effect.promise(() =>
        old.send([
          ...pings,
          { jsonrpc: "2.0", id: 103, method: "tools/list" },
          { jsonrpc: "2.0", id: 104, method: "tools/call", params: { name: "helper", arguments: { message: 5 }, task: 5 } }
        ])
      )
      const batchAnswers = yield* answers(4)
      expect(batchAnswers).toEqual(expect.arrayContaining([
        { jsonrpc: "2.0", id: 101, result: {} },
        { jsonrpc: "2.0", id: 102, result: {} },
        { jsonrpc: "2.0", id: 103, result: expect.objectContaining({ tools: [expect.objectContaining({ name: "helper" })] }) },
        { jsonrpc: "2.0", id: 104, error: { code: -32602, message: expect.stringContaining("params.task") } }
      ]))
    }))
})
