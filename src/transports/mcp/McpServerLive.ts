/**
 * Foundry's agents served over MCP at `/mcp` (Streamable HTTP: POST for messages, GET for a
 * session's notification stream, DELETE to end a session), on the API's own router, so the
 * server's middleware (body limits, and later auth) applies to it as to every route. The request
 * body is read here, under the server's limit, and every failure is answered in JSON-RPC's shape,
 * which is what an MCP client reads.
 */
import { HttpApiBuilder, HttpIncomingMessage, HttpServerRequest } from "@effect/platform"
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { Effect, Either, Layer, Option } from "effect"
import { CurrentApp } from "../../compiler/CurrentApp.js"
import * as AgentTools from "./AgentTools.js"
import { type AgentServerServices, makeAgentServer } from "./agentServer.js"
import * as ConversationResources from "./ConversationResources.js"
import { defaults, type McpServerConfig } from "./McpServerConfig.js"
import * as McpSessions from "./McpSessions.js"

/** The endpoint's path. */
export const mcpPath = "/mcp"

/** The body of a POST, parsed; a JSON-RPC error response when it cannot be read or is not JSON. */
const readBody = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const limit = yield* HttpIncomingMessage.MaxBodySize
    const text = yield* Effect.either(request.text)
    if (Either.isLeft(text)) {
      const declared = Number(request.headers["content-length"] ?? Number.NaN)
      const tooLarge = Option.exists(limit, (bytes) => declared > Number(bytes))
      const most = Option.match(limit, { onNone: () => "", onSome: (bytes) => ` (at most ${bytes} bytes)` })
      return Either.left(
        yield* McpSessions.jsonRpcError(tooLarge ? 413 : 400, -32000, `the request body could not be read${most}: send one JSON-RPC message or batch`)
      )
    }
    const parsed = Either.try(() => JSON.parse(text.right))
    if (Either.isLeft(parsed)) return Either.left(yield* McpSessions.jsonRpcError(400, -32700, "Parse error: the request body is not JSON"))
    return Either.right<unknown>(parsed.right)
  })

/** The request as the SDK's transport takes it: a Web `Request` (its body is passed on parsed). */
const toWebRequest = (request: HttpServerRequest.HttpServerRequest) =>
  Option.map(HttpServerRequest.toURL(request), (url) => new Request(url, { method: request.method, headers: request.headers }))

/** The routes, over the current build's agents and the store, with tunables `config`. */
export const layer = (config: McpServerConfig = defaults) =>
  HttpApiBuilder.Router.use((router) =>
    Effect.gen(function*() {
      const runtime = yield* Effect.runtime<AgentServerServices>()
      const tools = yield* AgentTools.AgentTools
      const app = yield* Effect.flatMap(CurrentApp, (current) => current.get)

      // The agent list is announced to open sessions when it changes (a reload of the project).
      let announced = JSON.stringify(yield* tools.list)
      const announceChanges = (servers: ReadonlyArray<Server>) =>
        Effect.gen(function*() {
          const listed = JSON.stringify(yield* tools.list)
          if (listed === announced) return
          announced = listed
          yield* Effect.forEach(servers, (server) => Effect.tryPromise(() => server.sendToolListChanged()).pipe(Effect.ignore), {
            discard: true
          })
        })

      const sessions = yield* McpSessions.make({
        newServer: () => makeAgentServer(runtime),
        sessionIdle: config.sessionIdle,
        maxSessions: config.maxSessions,
        checkEvery: config.checkEvery,
        keepAlive: app.table.config.server.sseHeartbeat,
        onCheck: announceChanges
      })

      const handler = Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const web = toWebRequest(request)
        if (Option.isNone(web)) return yield* McpSessions.jsonRpcError(400, -32600, "the request URL or its Host header is not valid")
        if (request.method !== "POST") return yield* sessions.handle(web.value, undefined)
        const body = yield* readBody(request)
        return Either.isLeft(body) ? body.left : yield* sessions.handle(web.value, body.right)
      })

      yield* router.post(mcpPath, handler)
      yield* router.get(mcpPath, handler)
      yield* router.del(mcpPath, handler)
    })
  ).pipe(
    Layer.provide(AgentTools.layer),
    Layer.provide(ConversationResources.layer({ listed: config.recentConversations, runsScanned: config.recentConversations * 4 }))
  )
