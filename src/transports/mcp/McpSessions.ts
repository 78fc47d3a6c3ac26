/**
 * The MCP endpoint's sessions, over the SDK's Web-standard Streamable HTTP transport. An
 * `initialize` POST opens a stateful session: an MCP server and a transport of its own, named by
 * the `Mcp-Session-Id` its answer carries; requests with that header go to it (POST messages, GET
 * its stream of server notifications, DELETE ends it). A POST without the header that is not an
 * `initialize` is served statelessly, by a server that lives for that one request, for clients
 * that keep no session. A session ends on DELETE, after being idle for `sessionIdle`, when the
 * server's scope closes, and, idle the longest, when the sessions are at `maxSessions` and a new
 * one opens.
 */
import { randomUUID } from "node:crypto"
import { HttpServerResponse } from "@effect/platform"
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"
import { type InitializeRequest, isInitializeRequest, LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js"
import { Clock, Duration, Effect, Queue, type Scope, Stream } from "effect"
import { jsonRpcError, type JsonRpcErrorMessage } from "./jsonRpcError.js"

/** One open session. */
interface Session {
  readonly server: Server
  readonly transport: WebStandardStreamableHTTPServerTransport
  /** The protocol version agreed at its initialize. */
  readonly protocolVersion: string
  lastActive: number
  /** Requests of the session whose responses are still being sent (a GET stream stays open). */
  open: number
}

/** How sessions are made and kept. */
export interface McpSessionsOptions {
  /** A new MCP server, not yet connected. */
  readonly newServer: () => Server
  readonly sessionIdle: Duration.DurationInput
  readonly maxSessions: number
  readonly checkEvery: Duration.DurationInput
  /** The pause between keep-alive comments on an idle SSE stream. */
  readonly keepAlive: Duration.DurationInput
  /** Runs on every check while sessions are open, with their servers. */
  readonly onCheck: (servers: ReadonlyArray<Server>) => Effect.Effect<void>
}

/** The sessions: one handler for every request to the endpoint. */
export interface McpSessions {
  /**
   * Answers `request` (its body, already parsed, is `body`; `undefined` for GET and DELETE).
   * `answered`: the answers to requests of a batch that were taken out of `body` (invalid
   * params), sent in the same response as the answers to the rest.
   */
  readonly handle: (
    request: Request,
    body: unknown,
    answered?: ReadonlyArray<JsonRpcErrorMessage>
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  /** The protocol version agreed by the session `request` names; `undefined` without one. */
  readonly protocolVersion: (request: Request) => string | undefined
}

/** Messages as the events of an SSE stream, written as the SDK's transport writes its own. */
const sseEvents = (messages: ReadonlyArray<JsonRpcErrorMessage>): Uint8Array =>
  new TextEncoder().encode(messages.map((message) => `event: message\ndata: ${JSON.stringify(message)}\n\n`).join(""))

/**
 * The transport's answer as the HTTP server's, running `done` once its body has been sent (or
 * abandoned). The answers to a batch's requests taken out of it (`answered`) go first in the
 * stream of the others' answers, or, when the rest had no request (the transport accepted it with
 * 202), make the response. A response refusing the whole POST (no session, a wrong Accept) is
 * passed on as it is: alone, each request would have got it.
 */
const toHttpResponse = (response: Response, done: Effect.Effect<void>, answered: ReadonlyArray<JsonRpcErrorMessage> = []) => {
  const headers = [...response.headers]
  const body = response.body
  const contentType = response.headers.get("content-type") ?? undefined
  if (answered.length > 0 && response.status === 202) return Effect.as(done, HttpServerResponse.unsafeJson(answered))
  if (body === null) return Effect.as(done, HttpServerResponse.empty({ status: response.status, headers }))
  const stream = Stream.fromReadableStream({ evaluate: () => body, onError: (cause) => cause })
  const sent = answered.length > 0 && response.ok && contentType === "text/event-stream"
    ? Stream.concat(Stream.make(sseEvents(answered)), stream)
    : stream
  return Effect.succeed(HttpServerResponse.stream(sent.pipe(Stream.ensuring(done)), { status: response.status, headers, contentType }))
}

/** The version the SDK's server agrees to for `initialize`: the one asked for if it speaks it, else its latest. */
const agreedVersion = (initialize: InitializeRequest): string =>
  SUPPORTED_PROTOCOL_VERSIONS.includes(initialize.params.protocolVersion) ? initialize.params.protocolVersion : LATEST_PROTOCOL_VERSION

/** Sessions kept until the scope closes. */
export const make = (options: McpSessionsOptions): Effect.Effect<McpSessions, never, Scope.Scope> =>
  Effect.gen(function*() {
    const sessions = new Map<string, Session>()
    const idleMillis = Duration.toMillis(Duration.decode(options.sessionIdle))
    const keepAliveMs = Duration.toMillis(Duration.decode(options.keepAlive))
    const close = (server: Server) => Effect.promise(() => server.close())

    yield* Effect.addFinalizer(() => Effect.forEach([...sessions.values()], (session) => close(session.server), { discard: true }))

    // Checks run only while a session is open, so an idle server does not wake for them.
    const firstOpened = yield* Queue.sliding<void>(1)
    yield* Effect.gen(function*() {
      if (sessions.size === 0) yield* Queue.take(firstOpened)
      yield* Effect.sleep(options.checkEvery)
      const now = yield* Clock.currentTimeMillis
      const idle = [...sessions.values()].filter((session) => session.open === 0 && now - session.lastActive > idleMillis)
      yield* Effect.forEach(idle, (session) => close(session.server), { discard: true })
      yield* options.onCheck([...sessions.values()].map((session) => session.server))
    }).pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("checking the MCP sessions failed", cause)),
      Effect.forever,
      Effect.forkScoped
    )

    const connect = (sessionIdGenerator: (() => string) | undefined) =>
      Effect.gen(function*() {
        const server = options.newServer()
        const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator, keepAliveMs })
        // DELETE, an idle check and the scope's end all close the server, which closes the transport.
        transport.onclose = () => {
          if (transport.sessionId !== undefined) sessions.delete(transport.sessionId)
        }
        yield* Effect.promise(() => server.connect(transport))
        return { server, transport }
      })

    // Sessions being opened: counted against the most allowed from the check on, as a new session
    // is in the map only once its initialize has been answered (many at once all passed the check).
    let opening = 0
    const open = (request: Request, body: InitializeRequest) =>
      Effect.gen(function*() {
        let makingRoom: Session | undefined
        if (sessions.size + opening >= options.maxSessions) {
          // Full: the session idle the longest makes room (sessions that were opened and left, by a
          // client gone or by anyone opening many, must not lock every MCP host out); only when
          // each has a request or stream open is the new one refused.
          makingRoom = [...sessions.values()].filter((s) => s.open === 0).sort((a, b) => a.lastActive - b.lastActive)[0]
          if (makingRoom === undefined) {
            return yield* jsonRpcError(503, -32000, `${options.maxSessions} MCP sessions are open and busy, the most allowed: end one (DELETE /mcp) or try again later`)
          }
          // Out of the count at once, in the step that takes its place: another open at the same
          // moment does not pick it too, nor find room it has not made yet.
          if (makingRoom.transport.sessionId !== undefined) sessions.delete(makingRoom.transport.sessionId)
        }
        opening++
        let counted = true
        const uncount = () => {
          if (counted) opening--
          counted = false
        }
        return yield* Effect.ensuring(
          Effect.gen(function*() {
            if (makingRoom !== undefined) yield* close(makingRoom.server)
            const { server, transport } = yield* connect(randomUUID)
            const response = yield* Effect.promise(() => transport.handleRequest(request, { parsedBody: body }))
            const sessionId = transport.sessionId
            if (sessionId === undefined) {
              yield* close(server)
              return yield* toHttpResponse(response, Effect.void)
            }
            const session: Session = { server, transport, protocolVersion: agreedVersion(body), lastActive: yield* Clock.currentTimeMillis, open: 1 }
            // In the map as it stops being counted as opening, in one step.
            sessions.set(sessionId, session)
            uncount()
            yield* Queue.offer(firstOpened, undefined)
            return yield* toHttpResponse(response, settled(session))
          }),
          Effect.sync(uncount)
        )
      })

    /** Marks a request of `session` answered. */
    const settled = (session: Session) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.sync(() => {
          session.open--
          session.lastActive = now
        }))

    const resume = (session: Session, request: Request, body: unknown, answered: ReadonlyArray<JsonRpcErrorMessage>) =>
      Effect.gen(function*() {
        session.open++
        session.lastActive = yield* Clock.currentTimeMillis
        // A transport that fails the request has no response to end it: it is settled here, or the
        // session would count a request open for good, never idle and never made room for.
        const response = yield* Effect.promise(() => session.transport.handleRequest(request, { parsedBody: body })).pipe(
          Effect.onError(() => settled(session))
        )
        return yield* toHttpResponse(response, settled(session), answered)
      })

    const stateless = (request: Request, body: unknown, answered: ReadonlyArray<JsonRpcErrorMessage>) =>
      Effect.gen(function*() {
        const { server, transport } = yield* connect(undefined)
        const response = yield* Effect.promise(() => transport.handleRequest(request, { parsedBody: body }))
        return yield* toHttpResponse(response, close(server), answered)
      })

    // Uninterruptible until the response exists (the transport answers at once, streaming what
    // follows): from then on the response's stream ends the request's bookkeeping, however it ends.
    const handle = (request: Request, body: unknown, answered: ReadonlyArray<JsonRpcErrorMessage> = []) =>
      Effect.uninterruptible(Effect.suspend(() => route(request, body, answered)))

    const route = (request: Request, body: unknown, answered: ReadonlyArray<JsonRpcErrorMessage>) => {
      const sessionId = request.headers.get("mcp-session-id")
      if (sessionId !== null) {
        const session = sessions.get(sessionId)
        return session === undefined
          ? jsonRpcError(404, -32001, `there is no MCP session "${sessionId}" (it ended or never was): start a new one with an initialize request`)
          : resume(session, request, body, answered)
      }
      if (request.method !== "POST") {
        return jsonRpcError(400, -32000, `${request.method} /mcp needs the Mcp-Session-Id header of an open session: start one with an initialize request (POST)`)
      }
      return isInitializeRequest(body) ? open(request, body) : stateless(request, body, answered)
    }

    const protocolVersion = (request: Request) => {
      const sessionId = request.headers.get("mcp-session-id")
      return sessionId === null ? undefined : sessions.get(sessionId)?.protocolVersion
    }

    return { handle, protocolVersion }
  })
