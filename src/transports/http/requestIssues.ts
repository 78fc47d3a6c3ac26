/**
 * Why HttpApi refused a request, field by field. HttpApi keeps only the first problem it met, as a
 * Schema tree, so the edge decodes the request again against the endpoint's own schemas with every
 * error collected, and reads the result with `readableIssues`.
 */
import { HttpApi, type HttpApiEndpoint, type HttpApiGroup, HttpMethod, HttpServerRequest, UrlParams } from "@effect/platform"
import { Effect, Either, Option, ParseResult, Schema } from "effect"
import { type ReadableIssue, readableIssues } from "../../definitions/readableIssues.js"

/** An endpoint of an API, whatever its schemas. */
export type Endpoint = HttpApiEndpoint.HttpApiEndpoint<string, HttpMethod.HttpMethod>

/**
 * The problems of the current request against the endpoint of `api` it is for: empty when it
 * matches no endpoint, or when its endpoint accepts it (the failure was not the request's).
 */
export const requestIssues = <Id extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<Id, Groups, E, R>
): Effect.Effect<ReadonlyArray<ReadableIssue>, never, HttpServerRequest.HttpServerRequest> => {
  const endpoints = endpointsOf(api)
  return Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const url = new URL(request.url, "http://request")
    const match = endpointOf(endpoints, request.method, url.pathname)
    if (match === undefined) return []
    const { endpoint, params } = match
    const query = HttpServerRequest.searchParamsFromURL(url)
    // The same inputs, in the same order, as HttpApiBuilder decodes them.
    const issues = yield* Effect.all([
      issuesOf(endpoint.pathSchema, Effect.succeed(params), "(path)"),
      issuesOf(endpoint.payloadSchema, payloadOf(request, query), "(body)"),
      issuesOf(endpoint.headersSchema, Effect.succeed(request.headers), "(headers)"),
      issuesOf(endpoint.urlParamsSchema, Effect.succeed(query), "(query)")
    ])
    return issues.flat()
  })
}

const issuesOf = <A, E>(
  schema: Option.Option<Schema.Schema<A, unknown>>,
  input: Effect.Effect<unknown, E>,
  root: string
): Effect.Effect<ReadonlyArray<ReadableIssue>> =>
  Option.match(schema, {
    onNone: () => Effect.succeed([]),
    onSome: (schema) =>
      input.pipe(
        Effect.flatMap((value) => Schema.decodeUnknown(schema)(value, { errors: "all" })),
        Effect.either,
        // A body that cannot be read is answered where it is read, not here.
        Effect.map((result) =>
          Either.isLeft(result) && ParseResult.isParseError(result.left) ? readableIssues(result.left, { root }) : []
        )
      )
  })

/** The body as HttpApiBuilder reads it: JSON unless the content type says a form or text. */
const payloadOf = (request: HttpServerRequest.HttpServerRequest, query: unknown) => {
  if (!HttpMethod.hasBody(request.method)) return Effect.succeed(query)
  const contentType = request.headers["content-type"] ?? "application/json"
  if (contentType.includes("application/json")) return request.json
  if (contentType.includes("x-www-form-urlencoded")) return Effect.map(request.urlParamsBody, UrlParams.toRecord)
  return request.text
}

/**
 * The methods the endpoints of `api` take at a path, for a request no route took: a path that is
 * a route for other methods is answered 405 with them, not 404.
 */
export const methodsAt = <Id extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<Id, Groups, E, R>
): (pathname: string) => ReadonlyArray<string> => {
  const endpoints = endpointsOf(api)
  return (pathname) => [...new Set(matchesAt(endpoints, pathname).map(({ endpoint }) => endpoint.method))].sort()
}

/** The endpoints of `api`. */
export const endpointsOf = <Id extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<Id, Groups, E, R>
): ReadonlyArray<Endpoint> => {
  const endpoints: Array<Endpoint> = []
  HttpApi.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      endpoints.push(endpoint)
    }
  })
  return endpoints
}

/** The endpoints whose path `pathname` is, whatever their method, each with its path parameters. */
const matchesAt = (endpoints: ReadonlyArray<Endpoint>, pathname: string) => {
  const segments = pathname.replace(/(.)\/$/, "$1").split("/")
  return endpoints.flatMap((endpoint) => {
    const params = paramsOf(endpoint.path.split("/"), segments)
    return params === undefined ? [] : [{ endpoint, params }]
  })
}

/** The endpoint a path is for, and its path parameters; a fixed segment wins over a parameter. */
export const endpointOf = (endpoints: ReadonlyArray<Endpoint>, method: HttpMethod.HttpMethod, pathname: string) =>
  matchesAt(endpoints, pathname)
    .filter(({ endpoint }) => endpoint.method === method)
    .sort((a, b) => Object.keys(a.params).length - Object.keys(b.params).length)[0]

const paramsOf = (template: ReadonlyArray<string>, segments: ReadonlyArray<string>) => {
  if (template.length !== segments.length) return undefined
  const params: Record<string, string> = {}
  for (const [index, expected] of template.entries()) {
    const actual = segments[index] ?? ""
    if (expected.startsWith(":")) params[expected.slice(1)] = decodeSegment(actual)
    else if (expected !== actual) return undefined
  }
  return params
}

const decodeSegment = (segment: string): string => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}
