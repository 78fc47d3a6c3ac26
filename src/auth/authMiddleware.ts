/**
 * The door as global HTTP middleware: every request passes `Auth.admit` before any route (the
 * API, `/v1`, `/mcp`, the inspector) runs. A refusal is answered here, in the shape its clients
 * read: OpenAI's error object under `/v1`, Foundry's `{ _tag, message }` elsewhere.
 */
import { type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Schema } from "effect"
import { orStoreUnavailable } from "../transports/http/handlers/storeUnavailable.js"
import { isOpenAiPath, openAiRefusal } from "../transports/http/refusalShape.js"
import { type AccessDenied, Forbidden, RateLimited, Unauthorized } from "./accessErrors.js"
import { Auth, type Knock } from "./Auth.js"
import { normalizedPath } from "./routeAccess.js"
import { sessionCookie } from "./sessionCookie.js"
import { sendsFoundryToken } from "./token.js"

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

/** What the door looks at in a request. */
export const knockOf = (request: HttpServerRequest.HttpServerRequest): Knock => ({
  method: request.method,
  url: request.originalUrl,
  authorization: request.headers["authorization"],
  session: request.cookies[sessionCookie.key],
  proxied: isProxied(request)
})

// What proxies add to a request they pass on (nginx's and Caddy's usual ones among them).
const forwardingHeaders = ["forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-real-ip"]

/** Whether a proxy passed the request on: it may come from beyond this machine. */
const isProxied = (request: HttpServerRequest.HttpServerRequest): boolean =>
  forwardingHeaders.some((header) => request.headers[header] !== undefined)

/**
 * The middleware, for `HttpApiBuilder.middleware`. An open door (a loopback server without
 * required tokens) serves a request without a Foundry token as it is, with nothing to ask (an
 * OpenAI client's API key is no Foundry token); one that sends a Foundry token anyway is held to
 * it, as its client expects (a wrong token is not let through unnoticed, nor a deploy recorded as
 * made by a token that may not deploy).
 */
export const authMiddleware = Effect.map(Auth, (auth) => (app: HttpApp.Default) => {
  const admitted = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const knock = knockOf(request)
    return yield* auth.admit(knock).pipe(
      orStoreUnavailable,
      Effect.matchEffect({
        onSuccess: () => app,
        onFailure: (error) => error._tag === "StoreUnavailable" ? Effect.fail(error) : refusal(error, normalizedPath(knock.url))
      })
    )
  })
  return auth.mode === "open"
    ? Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => sendsFoundryToken(request.headers["authorization"]) || isProxied(request) ? admitted : app)
    : admitted
})
