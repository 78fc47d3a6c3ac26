/**
 * The native API's queries refuse parameters their endpoint does not take, as its bodies refuse
 * fields (`strictBody`): a misspelt filter (`instance=` on `/api/events`, which takes
 * `instanceId=`) was dropped without a word, and the answer was every event. The 400 names the
 * parameter, the one it likely meant, and those the endpoint takes. Only paths under `/api/`:
 * `/v1`'s callers (OpenAI's clients) and `/hooks`' (webhook senders) add parameters of their own.
 */
import { type HttpApi, type HttpApiGroup, type HttpApp, HttpServerRequest } from "@effect/platform"
import { Effect, Option, SchemaAST } from "effect"
import { formatIssues, type ReadableIssue } from "../../definitions/readableIssues.js"
import { didYouMean, meantField } from "../../text/closest.js"
import { BadRequest } from "./api/BadRequest.js"
import { type Endpoint, endpointOf, endpointsOf } from "./requestIssues.js"

/** The query parameters `endpoint` takes, in the order its schema declares them. */
const parametersOf = (endpoint: Endpoint): ReadonlyArray<string> =>
  Option.match(endpoint.urlParamsSchema, {
    onNone: () => [],
    onSome: (schema) => SchemaAST.getPropertySignatures(schema.ast).map((signature) => String(signature.name))
  })

const issueOf = (name: string, endpoint: Endpoint, takes: ReadonlyArray<string>): ReadableIssue => {
  const where = `is not a parameter of ${endpoint.method} ${endpoint.path}`
  if (takes.length === 0) return { path: name, message: `${where}, which takes none` }
  return { path: name, message: `${where}${didYouMean(meantField(name, takes))} (it takes: ${takes.join(", ")})` }
}

/** API middleware: a request to an endpoint of `api` under `/api/` with a query parameter it does not take gets 400 naming it. */
export const refuseUnknownQueryParams = <Id extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<Id, Groups, E, R>
) => {
  const endpoints = endpointsOf(api)
  const parameters = new Map(endpoints.map((endpoint) => [endpoint, parametersOf(endpoint)]))
  return (app: HttpApp.Default): HttpApp.Default<BadRequest> =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      // Most requests have no query: they pay for this check only.
      if (!request.url.includes("?")) return app
      const url = new URL(request.url, "http://request")
      if (!url.pathname.startsWith("/api/")) return app
      const endpoint = endpointOf(endpoints, request.method, url.pathname)?.endpoint
      if (endpoint === undefined) return app
      const takes = parameters.get(endpoint) ?? []
      const unknown = [...new Set(url.searchParams.keys())].filter((name) => !takes.includes(name))
      if (unknown.length === 0) return app
      const issues = unknown.map((name) => issueOf(name, endpoint, takes))
      return Effect.fail(new BadRequest({ message: formatIssues(issues), issues }))
    })
}
