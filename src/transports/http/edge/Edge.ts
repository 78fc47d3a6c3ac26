/**
 * The HTTP edge: what every request passes before a route sees it. In order: security headers on
 * whatever the answer is; the `Host` check (DNS rebinding); the `Origin` check and CORS; requests
 * of a shape no route reads; the body size limit. The allowlists are read from the serving build's config on every request, so a
 * reload of `foundry.config.ts` applies them.
 */
import { type HttpApp, HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { CurrentApp } from "../../../compiler/CurrentApp.js"
import { limitBody } from "./bodyLimit.js"
import { isAllowedHost } from "./hostPolicy.js"
import { decideOrigin } from "./originPolicy.js"
import { pathOf, refusal } from "./refusal.js"
import { refuseUnreadable } from "./requestShape.js"
import { addToResponse, addUnlessSet, securityHeaders } from "./securityHeaders.js"

/** How long a browser may keep a preflight's answer. */
const preflightMaxAgeSeconds = 600

const preflight = (origin: string, method: string, headers: string | undefined) =>
  HttpServerResponse.empty({
    status: 204,
    headers: {
      "access-control-allow-origin": origin,
      "access-control-allow-methods": method,
      ...(headers === undefined ? {} : { "access-control-allow-headers": headers }),
      "access-control-max-age": String(preflightMaxAgeSeconds),
      vary: "origin, access-control-request-method, access-control-request-headers"
    }
  })

/**
 * The edge as a middleware, for the server bound to `host` at `HttpServer`'s port; bodies over
 * `bodyLimit` bytes are refused.
 */
export const edge = (options: { readonly bodyLimit: number; readonly host: string; readonly allowedHosts: ReadonlyArray<string> }) =>
  Effect.gen(function*() {
    const current = yield* CurrentApp
    const { address } = yield* HttpServer.HttpServer
    const port = address._tag === "TcpAddress" ? address.port : 0
    const limited = limitBody(options.bodyLimit)
    return <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> => {
      const inner = limited(app)
      return Effect.gen(function*() {
        yield* addUnlessSet(securityHeaders)
        const request = yield* HttpServerRequest.HttpServerRequest
        const host = request.headers.host
        // The names of the config the server started with: whether it needs tokens was decided by them.
        if (!isAllowedHost(host, { port, boundHost: options.host, allowedHosts: options.allowedHosts })) {
          return refusal(
            pathOf(request),
            403,
            "HostNotAllowed",
            host === undefined
              ? "the request has no Host header: send the host and port you reach the server by"
              : `the server does not answer to Host "${host}": if that is a name you reach it by, add it to server.allowedHosts in foundry.config.ts and restart the server`
          )
        }
        const { server } = (yield* current.get).table.config
        const decision = decideOrigin({
          method: request.method,
          host,
          origin: request.headers.origin,
          fetchSite: request.headers["sec-fetch-site"],
          preflightMethod: request.headers["access-control-request-method"]
        }, { allowedOrigins: server.allowedOrigins ?? [], corsOrigins: server.cors?.origins ?? [] })
        switch (decision._tag) {
          case "Refuse":
            return refusal(pathOf(request), 403, "OriginNotAllowed", decision.message)
          case "Preflight":
            return preflight(
              decision.origin,
              request.headers["access-control-request-method"] ?? request.method,
              request.headers["access-control-request-headers"]
            )
          case "Serve":
            if (decision.cors !== undefined) {
              yield* addToResponse({ "access-control-allow-origin": decision.cors, vary: "origin" })
            }
            return refuseUnreadable(request) ?? (yield* inner)
        }
      })
    }
  })
