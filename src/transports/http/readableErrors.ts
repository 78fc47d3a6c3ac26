/**
 * Middleware that keeps the API's promises at its edge: request bodies are size-limited; a request
 * that does not match its endpoint gets a `BadRequest` saying which field is wrong, one line each;
 * a body that is not JSON or a path that is not a route gets a JSON error that says so (a browser
 * asking for a page that is not one, the inspector's), and so does a defect no handler caught (a
 * 500, logged): never an empty response, a Schema tree or a stack trace.
 */
import { HttpApiError, type HttpApp, HttpMethod, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Effect, Option } from "effect"
import { formatIssues } from "../../definitions/readableIssues.js"
import { pageNotFound } from "../inspector/InspectorLive.js"
import { BadRequest } from "./api/BadRequest.js"
import { FoundryApi } from "./api/FoundryApi.js"
import { pathOf, refusal } from "./edge/refusal.js"
import { isOpenAiPath } from "./refusalShape.js"
import { methodsAt, requestIssues } from "./requestIssues.js"
import { mcpMethods, mcpPath } from "../mcp/McpServerLive.js"

const issuesOfRequest = requestIssues(FoundryApi)

// The MCP endpoint is on the router beside the API's endpoints.
const methodsOfApi = methodsAt(FoundryApi)
const methodsOf = (path: string): ReadonlyArray<string> => path === mcpPath ? mcpMethods : methodsOfApi(path)

/**
 * Whether the request sent a body in another form than JSON, the only one the API reads: a form
 * (`curl -d` sends one) or text would otherwise be explained field by field as if it were empty.
 */
const notJson = (request: HttpServerRequest.HttpServerRequest): boolean =>
  HttpMethod.hasBody(request.method) && !(request.headers["content-type"] ?? "application/json").toLowerCase().includes("application/json")

const explain = Effect.fn("readableErrors.explain")(function*(error: HttpApiError.HttpApiDecodeError) {
  const request = yield* HttpServerRequest.HttpServerRequest
  if (notJson(request)) {
    return yield* HttpServerResponse.json({
      _tag: "UnsupportedMediaType",
      message: `the body must be JSON: send it with content-type: application/json (got ${request.headers["content-type"]})`
    }, { status: 415 }).pipe(Effect.orDie)
  }
  const issues = yield* issuesOfRequest
  if (issues.length > 0) return yield* new BadRequest({ message: formatIssues(issues), issues })
  // HttpApi also reports a handler's own decode failure, or a response that does not match its
  // schema, as the client's: those are the server's bugs.
  return yield* Effect.die(new Error(`a decode failure that is not the request's: ${error.message}`))
})

/**
 * Wraps the API's app; `maxBodyBytes` (the config's `server.bodyLimit`) is what a body that cannot
 * be read is said to be at most (the server reads bodies no larger: `HttpServerLive`).
 */
export const readableErrors = (maxBodyBytes: number) => <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E | BadRequest, R> =>
  app.pipe(
    Effect.catchAllCause((cause): HttpApp.Default<E | BadRequest> => {
      // Body decoding dies rather than fails inside HttpApi, so defects are looked at too.
      const error = Cause.squash(cause)
      if (error instanceof HttpApiError.HttpApiDecodeError) return explain(error)
      // HttpApi's own message for a body nested thousands deep runs out of stack while it prints the
      // body: explained as any body that does not match; any other (a handler's) is the server's.
      if (error instanceof RangeError) {
        return Effect.gen(function*() {
          const issues = notJson(yield* HttpServerRequest.HttpServerRequest) ? [] : yield* issuesOfRequest
          return issues.length > 0 ? yield* new BadRequest({ message: formatIssues(issues), issues }) : yield* internalError(cause)
        })
      }
      if (HttpServerError.isServerError(error)) {
        switch (error._tag) {
          case "RequestError":
            return Effect.fail(
              new BadRequest({
                message: error.reason === "Decode"
                  ? `the request body could not be read: send valid JSON (at most ${maxBodyBytes} bytes) with content-type: application/json`
                  : "the request could not be read",
                issues: []
              })
            )
          case "RouteNotFound": {
            // A browser's page gets the inspector's; any other client the shape it reads: OpenAI's under /v1.
            const page = pageNotFound(error.request)
            if (page !== undefined) return page
            const path = pathOf(error.request)
            const allowed = methodsOf(path)
            // The router refused a path its routes match (its percent-encoding broken): the path's fault, not the method's.
            if (allowed.includes(error.request.method)) {
              return Effect.succeed(refusal(
                path,
                400,
                "BadPath",
                `${error.request.method} ${error.request.url}: the path could not be read (is its percent-encoding whole? an id goes in the path encoded with encodeURIComponent)`
              ))
            }
            if (allowed.length > 0) {
              return Effect.succeed(refusal(
                path,
                405,
                "MethodNotAllowed",
                `${error.request.method} is not how ${path} is used: it takes ${allowed.join(", ")}`,
                { allow: allowed.join(", ") }
              ))
            }
            const routes = isOpenAiPath(path) ? "/v1's routes are /v1/models and /v1/chat/completions" : "see /api/openapi.json"
            return Effect.succeed(refusal(path, 404, "NotFound", `${error.request.method} ${error.request.url} is not a route; ${routes}`))
          }
        }
      }
      return Option.isSome(Cause.failureOption(cause)) || Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : internalError(cause)
    })
  )

/**
 * A defect no handler caught (a bug, in Foundry or in a route file's code, or a config value that
 * cannot be read): logged whole, and answered as JSON that says so, not as the platform's empty 500.
 */
const internalError = (cause: Cause.Cause<unknown>) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const path = pathOf(request)
    yield* Effect.logError(`${request.method} ${path} failed`, cause)
    // What failed stays in the log: a client (on /hooks, anyone) is told no internals.
    return refusal(path, 500, "InternalError", "the server failed on this request; its log has the details")
  })
