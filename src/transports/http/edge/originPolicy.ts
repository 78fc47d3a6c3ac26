/**
 * What the edge does with a request's `Origin`. Browsers send it on every request that can change
 * state; clients that are not browsers (curl, SDKs) send none and pass. The server's own origin,
 * `server.allowedOrigins` and `server.cors.origins` may change state; any other origin may not,
 * and may not even read when the browser says the request is cross-site. CORS is off unless
 * `server.cors` lists origins: only they get preflights answered and responses they can read.
 */
import { HttpMethod } from "@effect/platform"

/** The parts of a request the decision reads. */
export interface OriginRequest {
  readonly method: HttpMethod.HttpMethod
  readonly host: string | undefined
  readonly origin: string | undefined
  /** `Sec-Fetch-Site`, which browsers set and pages cannot. */
  readonly fetchSite: string | undefined
  /** `Access-Control-Request-Method`: present on a CORS preflight. */
  readonly preflightMethod: string | undefined
}

/** The origins the config lets in. */
export interface OriginPolicy {
  readonly allowedOrigins: ReadonlyArray<string>
  readonly corsOrigins: ReadonlyArray<string>
}

/** What to do: serve (with CORS headers for `cors`), answer a preflight, or refuse and why. */
export type OriginDecision =
  | { readonly _tag: "Serve"; readonly cors: string | undefined }
  | { readonly _tag: "Preflight"; readonly origin: string }
  | { readonly _tag: "Refuse"; readonly message: string }

const isSameOrigin = (origin: string, host: string | undefined): boolean => {
  if (host === undefined || !URL.canParse(origin)) return false
  const url = new URL(origin)
  return (url.protocol === "http:" || url.protocol === "https:") && url.host === host.toLowerCase()
}

/** The decision for one request. */
export const decideOrigin = (request: OriginRequest, policy: OriginPolicy): OriginDecision => {
  const { origin } = request
  if (origin === undefined) return { _tag: "Serve", cors: undefined }
  const cors = policy.corsOrigins.includes(origin)
  const allowed = cors || policy.allowedOrigins.includes(origin) || isSameOrigin(origin, request.host)
  if (request.method === "OPTIONS" && request.preflightMethod !== undefined) {
    if (cors) return { _tag: "Preflight", origin }
    if (!allowed) {
      return { _tag: "Refuse", message: `CORS is off for origin ${origin}: add it to server.cors.origins in foundry.config.ts to let its pages call the API` }
    }
  }
  if (allowed) return { _tag: "Serve", cors: cors ? origin : undefined }
  if (HttpMethod.hasBody(request.method) || request.fetchSite === "cross-site") {
    return {
      _tag: "Refuse",
      message: `requests from origin ${origin} are refused: add it to server.allowedOrigins (or server.cors.origins) in foundry.config.ts if its pages may use the API`
    }
  }
  return { _tag: "Serve", cors: undefined }
}
