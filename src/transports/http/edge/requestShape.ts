/**
 * Requests no route of the server can read, refused before one tries: a path with an empty
 * segment (`/api//runs`: the router would serve it as `/api/runs`, but the API's own checks would
 * not find the endpoint to explain a refusal by) and a multipart body (no route reads one, and
 * the platform's multipart parser waits for a boundary that a malformed body never sends).
 */
import { HttpMethod, type HttpServerRequest } from "@effect/platform"
import { pathOf, refusal } from "./refusal.js"

/** The refusal for a request of a shape no route reads; `undefined` for every other request. */
export const refuseUnreadable = (request: HttpServerRequest.HttpServerRequest) => {
  const path = pathOf(request)
  if (path.includes("//")) {
    return refusal(path, 404, "NotFound", `${request.method} ${path} is not a route (it has an empty segment); see /api/openapi.json`)
  }
  const contentType = (request.headers["content-type"] ?? "").toLowerCase()
  if (HttpMethod.hasBody(request.method) && contentType.startsWith("multipart/")) {
    return refusal(path, 415, "UnsupportedMediaType", `no route reads ${contentType.split(";")[0]} bodies: send JSON with content-type: application/json`)
  }
  return undefined
}
