/**
 * Requests no route of the server can read, refused before one tries: a path with an empty
 * segment (`/api//runs`: the router would serve it as `/api/runs`, but the API's own checks would
 * not find the endpoint to explain a refusal by), a path with a `;` (the router takes what follows
 * it for a query, as some servers do with `;jsessionid=`: `/api/tokens;x` was served as
 * `/api/tokens` while the door decided its access as a path of its own), a multipart body (no route reads one, and
 * the platform's multipart parser waits for a boundary that a malformed body never sends), and a
 * body to the native API or `/v1` in any form but JSON: the platform would read a form (`curl -d`
 * sends one) as the payload, and a form is what another site's page can send without asking.
 * Webhooks are read as JSON whatever their sender labels them.
 */
import { HttpMethod, type HttpServerRequest } from "@effect/platform"
import { pathOf, refusal } from "./refusal.js"

/** `application/json`, or a JSON type of its own (`application/merge-patch+json`). */
const isJson = (contentType: string): boolean => {
  const media = contentType.split(";")[0]?.trim() ?? ""
  return media === "application/json" || media.endsWith("+json")
}

/** The refusal for a request of a shape no route reads; `undefined` for every other request. */
export const refuseUnreadable = (request: HttpServerRequest.HttpServerRequest) => {
  const path = pathOf(request)
  if (path.includes("//")) {
    return refusal(path, 404, "NotFound", `${request.method} ${path} is not a route (it has an empty segment); see /api/openapi.json`)
  }
  if (path.includes(";")) {
    return refusal(path, 404, "NotFound", `${request.method} ${path} is not a route (no path holds a ";"; percent-encode it as %3B); see /api/openapi.json`)
  }
  const contentType = (request.headers["content-type"] ?? "").toLowerCase()
  if (!HttpMethod.hasBody(request.method) || contentType === "") return undefined
  if (contentType.startsWith("multipart/") || ((path.startsWith("/api/") || path.startsWith("/v1/")) && !isJson(contentType))) {
    return refusal(path, 415, "UnsupportedMediaType", `no route reads ${contentType.split(";")[0]} bodies: send JSON with content-type: application/json`)
  }
  return undefined
}
