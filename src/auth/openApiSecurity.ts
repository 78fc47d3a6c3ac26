/**
 * The OpenAPI document's account of auth, derived from the same rules the middleware enforces
 * (`routeAccess`): the bearer scheme and the inspector's session cookie, each operation's
 * security (none for public routes), the scope it needs as `x-foundry-scope`, and its 401, 403
 * and 429 answers.
 */
import type { OpenApi } from "@effect/platform"
import { JSONSchema, type Schema } from "effect"
import { Forbidden, RateLimited, Unauthorized } from "./accessErrors.js"
import { routeAccess } from "./routeAccess.js"
import { legacySessionCookie } from "./sessionCookie.js"

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

const securitySchemes = {
  bearer: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "fdy_<id>_<secret>",
    description: "An API token from `foundry token create --scope read|run|deploy|admin`. Needed on every route that is not public " +
      "when the server listens beyond loopback, or when the config sets auth: { required: true }."
  },
  session: {
    type: "apiKey",
    in: "cookie",
    // The real name carries the server's port: `namingSessionCookie` sets it as the document is served.
    name: legacySessionCookie,
    description: "The inspector's session, set by POST /api/session with a token: a session of its own (never the token), " +
      "ending at sign-out (DELETE /api/session), after 12 hours, or when its token is revoked; taken only from this cookie"
  }
}

const refusals: ReadonlyArray<readonly [status: string, schema: Schema.Schema.Any, description: string]> = [
  ["401", Unauthorized, "No token, or an unknown or revoked one"],
  ["403", Forbidden, "The token's scope does not include the one this route needs"],
  ["429", RateLimited, "The token is over its rate limit; see the Retry-After header"]
]

/** An `OpenApi.Transform` that declares how the API is secured. */
export const declareSecurity = (spec: Record<string, unknown>): Record<string, unknown> => {
  const components = isRecord(spec.components) ? spec.components : {}
  const definitions: Record<string, JSONSchema.JsonSchema7> = {}
  const responses = Object.fromEntries(refusals.map(([status, schema, description]) => [status, {
    description,
    content: { "application/json": { schema: JSONSchema.fromAST(schema.ast, { definitions, definitionPath: "#/components/schemas/", target: "openApi3.1" }) } }
  }]))
  const paths = isRecord(spec.paths) ? spec.paths : {}
  const securedPaths = Object.fromEntries(Object.entries(paths).map(([path, item]) => {
    if (!isRecord(item)) return [path, item]
    // Path parameters (`{runId}`) stand for any segment; the rules never look inside one.
    const concrete = path.replace(/\{[^}]+\}/g, "x")
    return [path, Object.fromEntries(Object.entries(item).map(([method, operation]) => {
      if (!methods.includes(method) || !isRecord(operation)) return [method, operation]
      const access = routeAccess(method.toUpperCase(), concrete)
      if (access === "public") return [method, { ...operation, security: [] }]
      return [method, {
        ...operation,
        security: [{ bearer: [] }, { session: [] }],
        "x-foundry-scope": access,
        responses: { ...responses, ...(isRecord(operation.responses) ? operation.responses : {}) }
      }]
    }))]
  }))
  return {
    ...spec,
    paths: securedPaths,
    components: {
      ...components,
      schemas: { ...(isRecord(components.schemas) ? components.schemas : {}), ...definitions },
      securitySchemes: { ...(isRecord(components.securitySchemes) ? components.securitySchemes : {}), ...securitySchemes } },
    security: [{ bearer: [] }, { session: [] }]
  }
}

/** `spec` with the session cookie named as the server at hand names it (`foundry_session_<port>`). */
export const namingSessionCookie = (spec: OpenApi.OpenAPISpec, cookie: string): OpenApi.OpenAPISpec => {
  const session = spec.components.securitySchemes.session
  if (session?.type !== "apiKey") return spec
  return {
    ...spec,
    components: { ...spec.components, securitySchemes: { ...spec.components.securitySchemes, session: { ...session, name: cookie } } }
  }
}
