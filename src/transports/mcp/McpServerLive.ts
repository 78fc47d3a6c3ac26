/**
 * Foundry's agents served over MCP at `/mcp` (Streamable HTTP: POST for messages, GET for a
 * session's notification stream, DELETE to end a session), on the API's own router, so the
 * server's middleware (the edge's Host, Origin and body-size checks, auth) applies to it as to every
 * route. The request body is parsed here and handed to the SDK's transport; every failure from here
 * on is answered in JSON-RPC's shape, which is what an MCP client reads. The MCP SDK (with zod and
 * ajv) is imported by the endpoint's first request, not by every start of a server that may never
 * serve one (docs/decisions.md "Startup loads what it serves").
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { Data, Effect, Layer, Option, Scope } from "effect"
import { CurrentApp } from "../../compiler/CurrentApp.js"
import * as AgentTools from "./AgentTools.js"
import type { AgentServerServices } from "./agentServer.js"
import * as ConversationResources from "./ConversationResources.js"
import { jsonRpcError } from "./jsonRpcError.js"
import { defaults, type McpServerConfig } from "./McpServerConfig.js"

/** The endpoint's path. */
export const mcpPath = "/mcp"

/** The methods the endpoint takes (a request with another is refused 405, naming these). */
export const mcpMethods = ["DELETE", "GET", "POST"] as const

/** A POST body that cannot be read or is not JSON: a 400 with this JSON-RPC code. */
class UnreadableBody extends Data.TaggedError("UnreadableBody")<{
  readonly code: number
  readonly message: string
}> {}

/** The body of a POST, parsed. (The edge has refused bodies over the server's limit already.) */
const readBody = (request: HttpServerRequest.HttpServerRequest) =>
  request.text.pipe(
    Effect.mapError(() =>
      new UnreadableBody({ code: -32000, message: "the request body could not be read: send one JSON-RPC message or batch" })
    ),
    Effect.flatMap((text) =>
      Effect.try({
        try: (): unknown => JSON.parse(text),
        catch: () => new UnreadableBody({ code: -32700, message: "Parse error: the request body is not JSON" })
      })
    )
  )

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

      // Made by the first request, kept until the server's scope closes.
      const scope = yield* Effect.scope
      const sessions = yield* Effect.cached(
        Effect.promise(() => Promise.all([
          import("./McpSessions.js"),
          import("./agentServer.js"),
          import("./invalidParams.js"),
          import("./screenMessages.js")
        ])).pipe(
          Effect.flatMap(([McpSessions, { makeAgentServer }, { invalidParams }, { screenBatch, screenMessage }]) =>
            Scope.extend(
              McpSessions.make({
                newServer: () => makeAgentServer(runtime),
                sessionIdle: config.sessionIdle,
                maxSessions: config.maxSessions,
                checkEvery: config.checkEvery,
                keepAlive: app.table.config.server.sseHeartbeat,
                onCheck: announceChanges
              }),
              scope
            ).pipe(Effect.map((open) => ({ open, invalidParams, screenBatch, screenMessage })))
          )
        )
      )

      const handler = Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const web = toWebRequest(request)
        if (Option.isNone(web)) return yield* jsonRpcError(400, -32600, "the request URL or its Host header is not valid")
        const { invalidParams, open, screenBatch, screenMessage } = yield* sessions
        if (request.method !== "POST") return yield* open.handle(web.value, undefined)
        // A session that ended (or never was) is answered first: its 404 is what tells a client to
        // initialize again, whatever else is wrong with the message.
        const endedSession = web.value.headers.get("mcp-session-id") !== null && open.protocolVersion(web.value) === undefined
        return yield* readBody(request).pipe(
          Effect.flatMap((body) => {
            if (endedSession) return open.handle(web.value, body)
            if (Array.isArray(body)) {
              // A batch: refused whole where MCP has none; else each malformed element and each
              // request whose params are wrong gets the answer it would get alone, and the others
              // go to the transport.
              const screened = screenBatch(body, [open.protocolVersion(web.value), request.headers["mcp-protocol-version"]])
              if (screened._tag === "Refused") return Effect.succeed(HttpServerResponse.unsafeJson(screened.error, { status: screened.status }))
              const { answered, rest } = screened
              if (answered.length === 0) return open.handle(web.value, rest)
              return rest.length === 0 ? Effect.succeed(HttpServerResponse.unsafeJson(answered)) : open.handle(web.value, rest, answered)
            }
            // Params of a method served said wrong first: that is the more telling answer.
            const wrong = invalidParams(body)
            if (wrong !== undefined) return jsonRpcError(200, -32602, wrong.message, wrong.id)
            const notMessage = screenMessage(body)
            return notMessage === undefined ? open.handle(web.value, body) : Effect.succeed(HttpServerResponse.unsafeJson(notMessage, { status: 400 }))
          }),
          Effect.catchTag("UnreadableBody", (error) => jsonRpcError(400, error.code, error.message))
        )
      })

      yield* router.post(mcpPath, handler)
      yield* router.get(mcpPath, handler)
      yield* router.del(mcpPath, handler)
    })
  ).pipe(
    Layer.provide(AgentTools.layer),
    Layer.provide(ConversationResources.layer({ listed: config.recentConversations }))
  )
