/**
 * The door as global HTTP middleware: every request passes `Auth.admit` before any route (the
 * API, `/v1`, `/mcp`, the inspector) runs. A refusal is answered here, in the shape its clients
 * read: OpenAI's error object under `/v1`, Foundry's `{ _tag, message }` elsewhere.
 */
import { type HttpApp, HttpBody, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Schema, Stream } from "effect"
import { orStoreUnavailable } from "../transports/http/handlers/storeUnavailable.js"
import { isOpenAiPath, openAiRefusal } from "../transports/http/refusalShape.js"
import { type AccessDenied, Forbidden, RateLimited, Unauthorized } from "./accessErrors.js"
import { Auth, type Knock } from "./Auth.js"
import { normalizedPath } from "./routeAccess.js"
import { serverSessionCookie } from "./sessionCookie.js"
import { sendsFoundryToken } from "./token.js"
import { type AccessEnds, currentAccessEnds, eitherEnds, TokenRevocations } from "./TokenRevocations.js"

const encodeDenied = Schema.encodeSync(Schema.Union(Unauthorized, Forbidden, RateLimited))

const statusOf = { Unauthorized: 401, Forbidden: 403, RateLimited: 429 } as const

/** The answer to a refused request. */
const refusal = (denied: AccessDenied, path: string) =>
  HttpServerResponse.json(
    isOpenAiPath(path) ? openAiRefusal(statusOf[denied._tag], denied._tag, denied.message) : encodeDenied(denied),
    {
      status: statusOf[denied._tag],
      headers: denied._tag === "Unauthorized"
        ? { "www-authenticate": `Bearer realm="foundry"` }
        : denied._tag === "RateLimited"
        ? { "retry-after": String(denied.retryAfter) }
        : {}
    }
  ).pipe(Effect.orDie)

/**
 * What the door looks at in a request. Its path is the one the router matches (`url`), never the
 * source's (`originalUrl`): a request whose body the edge read itself (sent chunked) is made anew
 * from a web `Request`, whose source URL is absolute, and a door judging that spelling judged no
 * route it guards. The session is read from this server's cookie (`sessionCookie`, named by its port).
 */
export const knockOf = (request: HttpServerRequest.HttpServerRequest, sessionCookie: string): Knock => ({
  method: request.method,
  url: request.url,
  authorization: request.headers["authorization"],
  session: request.cookies[sessionCookie],
  proxied: isProxied(request)
})

// What proxies add to a request they pass on (nginx's and Caddy's usual ones among them).
const forwardingHeaders = ["forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-real-ip"]

/** Whether a proxy passed the request on: it may come from beyond this machine. */
const isProxied = (request: HttpServerRequest.HttpServerRequest): boolean =>
  forwardingHeaders.some((header) => request.headers[header] !== undefined)

/**
 * `app`, with what its answer keeps open ending with the access it was admitted with: a stream in
 * the response's body, or one its handler writes itself (`currentAccessEnds`).
 */
const endingWith = (app: HttpApp.Default, ends: AccessEnds): HttpApp.Default =>
  app.pipe(
    Effect.locally(currentAccessEnds, ends),
    Effect.map((response) => {
      const body = response.body
      if (body._tag !== "Stream") return response
      const revoked = Effect.async<void>((resume) => Effect.sync(ends(() => resume(Effect.void))))
      return HttpServerResponse.setBody(response, HttpBody.stream(Stream.interruptWhen(body.stream, revoked), body.contentType, body.contentLength))
    })
  )

/**
 * The middleware, for `HttpApiBuilder.middleware`. An open door (a loopback server without
 * required tokens) serves a request without a Foundry token as it is, with nothing to ask (an
 * OpenAI client's API key is no Foundry token); one that sends a Foundry token anyway is held to
 * it, as its client expects (a wrong token is not let through unnoticed, nor a deploy recorded as
 * made by a token that may not deploy). What a request admitted on a token keeps open ends when
 * the token is revoked, and, admitted on the inspector's session, when the session ends too.
 */
export const authMiddleware = Effect.map(Effect.all([Auth, TokenRevocations, serverSessionCookie]), ([auth, revocations, cookie]) => (app: HttpApp.Default) => {
  const admitted = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const knock = knockOf(request, cookie)
    return yield* auth.admit(knock).pipe(
      orStoreUnavailable,
      Effect.matchEffect({
        onSuccess: Option.match({
          onNone: () => app,
          onSome: ({ session, tokenId }) =>
            endingWith(
              app,
              Option.match(session, {
                onNone: () => revocations.onRevoked(tokenId),
                onSome: (ended) => eitherEnds(revocations.onRevoked(tokenId), revocations.onSessionEnded(ended))
              })
            )
        }),
        onFailure: (error) => error._tag === "StoreUnavailable" ? Effect.fail(error) : refusal(error, normalizedPath(knock.url))
      })
    )
  })
  return auth.mode === "open"
    ? Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => sendsFoundryToken(request.headers["authorization"]) || isProxied(request) ? admitted : app)
    : admitted
})
