import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { http, startServer } from "../support/server.js"
import { rawRequest } from "../transports/edgeClient.js"
import { authProject, bearer, issue } from "./support.js"

describe("bearer auth on a server whose config requires tokens (loopback)", () => {
  it.scopedLive("no token gets 401 with WWW-Authenticate: Bearer and a JSON error that says how to get one", () =>
    Effect.gen(function*() {
      const root = yield* authProject()
      const server = yield* startServer(root)
      const response = yield* http(`${server.url}/api/runs`)
      expect(response.status).toBe(401)
      expect(response.headers.get("www-authenticate")).toMatch(/^Bearer/)
      expect(response.json).toMatchObject({ _tag: "Unauthorized", message: expect.stringContaining("foundry token create") })
      const unknownRoute = yield* http(`${server.url}/api/nothing-here`)
      expect(unknownRoute.status).toBe(401)
      const garbage = yield* http(`${server.url}/api/runs`, { headers: bearer("fdy_0000000000000000_" + "a".repeat(43)) })
      expect(garbage.status).toBe(401)
      const basic = yield* http(`${server.url}/api/runs`, { headers: { authorization: "Basic dXNlcjpwYXNz" } })
      expect(basic.status).toBe(401)
      expect(basic.json).toMatchObject({ message: expect.stringContaining("Bearer <token>") })
    }))

  it.scopedLive("a read token reads but gets 403 naming scope run on submit; a run token submits (202)", () =>
    Effect.gen(function*() {
      const root = yield* authProject()
      const server = yield* startServer(root)
      const read = yield* issue(server.storeFile, "read")
      const run = yield* issue(server.storeFile, "run")
      const listed = yield* http(`${server.url}/api/runs`, { headers: bearer(read.token) })
      expect(listed.status).toBe(200)
      const refused = yield* http(`${server.url}/api/runs`, { body: { agent: "echo", message: "hi" }, headers: bearer(read.token) })
      expect(refused.status).toBe(403)
      expect(refused.json).toMatchObject({ _tag: "Forbidden", required: "run", scope: "read" })
      expect(refused.json).toMatchObject({ message: expect.stringContaining(`needs a token with scope "run"`) })
      const accepted = yield* http(`${server.url}/api/runs`, { body: { agent: "echo", message: "hi" }, headers: bearer(run.token) })
      expect(accepted.status).toBe(202)
      expect(accepted.json).toMatchObject({ runId: expect.any(String) })
    }))

  it.scopedLive("a revoked token gets 401 at once; the admin API lists tokens without their secrets", () =>
    Effect.gen(function*() {
      const root = yield* authProject()
      const server = yield* startServer(root)
      const admin = yield* issue(server.storeFile, "admin")
      const run = yield* issue(server.storeFile, "run", "ci")
      expect((yield* http(`${server.url}/api/runs`, { headers: bearer(run.token) })).status).toBe(200)
      const listed = yield* http(`${server.url}/api/tokens`, { headers: bearer(admin.token) })
      expect(listed.status).toBe(200)
      expect(listed.json).toEqual(expect.arrayContaining([expect.objectContaining({ id: run.id, name: "ci", scope: "run", revokedAt: null })]))
      expect(listed.text).not.toContain(run.token.slice(21))
      expect(listed.text).not.toContain("hash")
      const revoked = yield* http(`${server.url}/api/tokens/${run.id}`, { method: "DELETE", headers: bearer(admin.token) })
      expect(revoked.status).toBe(200)
      expect(revoked.json).toMatchObject({ id: run.id, revokedAt: expect.any(Number) })
      const after = yield* http(`${server.url}/api/runs`, { headers: bearer(run.token) })
      expect(after.status).toBe(401)
      expect(after.json).toMatchObject({ message: expect.stringContaining("unknown or revoked") })
      const missing = yield* http(`${server.url}/api/tokens/0123456789abcdef`, { method: "DELETE", headers: bearer(admin.token) })
      expect(missing.status).toBe(404)
      expect(missing.json).toMatchObject({ _tag: "TokenNotFound" })
    }))

  it.scopedLive("admin routes need admin: a run token gets 403 on tokens and schedule changes; a token made over the API works", () =>
    Effect.gen(function*() {
      const root = yield* authProject()
      const server = yield* startServer(root)
      const admin = yield* issue(server.storeFile, "admin")
      const run = yield* issue(server.storeFile, "run")
      const read = yield* issue(server.storeFile, "read")
      expect((yield* http(`${server.url}/api/tokens`, { headers: bearer(run.token) })).json).toMatchObject({ _tag: "Forbidden", required: "admin" })
      expect((yield* http(`${server.url}/api/tokens`, { body: { scope: "admin" }, headers: bearer(run.token) })).status).toBe(403)
      expect((yield* http(`${server.url}/api/schedules/nightly/pause`, { method: "POST", headers: bearer(run.token) })).status).toBe(403)
      expect((yield* http(`${server.url}/api/schedules`, { headers: bearer(read.token) })).status).toBe(200)
      // Another spelling of the same path is judged as the path it routes to.
      expect((yield* http(`${server.url}/api/%74okens`, { headers: bearer(read.token) })).status).toBe(403)
      // A path with an empty segment is no route: the edge refuses it before anything reads it.
      expect((yield* http(`${server.url}//api/tokens/`, { headers: bearer(read.token) })).status).toBe(404)
      // Nor another case, nor a ";" (which the router would take for a query): no route is served
      // under a spelling the door would judge as a path of its own.
      for (const path of ["/API/TOKENS", "/api/Tokens", "/api/tokens;x", "/api/tokens;/x"]) {
        const minted = yield* http(`${server.url}${path}`, { body: { scope: "admin" }, headers: bearer(run.token) })
        expect([path, minted.status]).toEqual([path, 404])
        expect([path, (yield* http(`${server.url}${path}`, { headers: bearer(read.token) })).status]).toEqual([path, 404])
      }
      expect((yield* http(`${server.url}/API/RELEASES`, { body: {}, headers: bearer(run.token) })).status).toBe(404)
      const created = yield* http(`${server.url}/api/tokens`, { body: { scope: "read", name: "dashboard" }, headers: bearer(admin.token) })
      expect(created.status).toBe(201)
      const made = created.json as { token: string; scope: string; name: string }
      expect(made).toMatchObject({ scope: "read", name: "dashboard", token: expect.stringMatching(/^fdy_[0-9a-f]{16}_/) })
      expect((yield* http(`${server.url}/api/runs`, { headers: bearer(made.token) })).status).toBe(200)
      const badScope = yield* http(`${server.url}/api/tokens`, { body: { scope: "root" }, headers: bearer(admin.token) })
      expect(badScope.status).toBe(400)
      expect(badScope.json).toMatchObject({ issues: [{ path: "scope", message: expect.stringContaining(`"read", "run", "deploy", "admin"`) }] })
    }))

  it.scopedLive("a body sent chunked is judged by the path it routes to: a run token gets 403 on admin routes, public routes stay open", () =>
    Effect.gen(function*() {
      const root = yield* authProject()
      const server = yield* startServer(root)
      const run = yield* issue(server.storeFile, "run")
      const chunked = (method: string, path: string, body: string, token?: string) =>
        rawRequest(server.url, {
          method,
          path,
          headers: { "content-type": "application/json", ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
          chunks: [body.slice(0, 5), body.slice(5)]
        })
      const minted = yield* chunked("POST", "/api/tokens", JSON.stringify({ scope: "admin", name: "escalated" }), run.token)
      expect(minted).toMatchObject({ _tag: "response", status: 403, json: { _tag: "Forbidden", required: "admin" } })
      const paused = yield* chunked("POST", "/api/schedules/nightly/pause", "{}", run.token)
      expect(paused).toMatchObject({ _tag: "response", status: 403 })
      // No token was made.
      const admin = yield* issue(server.storeFile, "admin")
      const tokens = (yield* http(`${server.url}/api/tokens`, { headers: bearer(admin.token) })).json as ReadonlyArray<{ name: string | null }>
      expect(tokens.map((token) => token.name)).not.toContain("escalated")
      // A route open to all is as open chunked: signing in, a webhook (signed on its own).
      const signIn = yield* chunked("POST", "/api/session", JSON.stringify({ token: run.token }))
      expect(signIn).toMatchObject({ _tag: "response", status: 204, headers: { "set-cookie": [expect.stringContaining("HttpOnly")] } })
      // The webhook's own refusal (unsigned, to a name none listens on: told as a bad signature), not the door's.
      const hook = yield* chunked("POST", "/hooks/unknown", "{}")
      expect(hook).toMatchObject({ _tag: "response", json: { _tag: "WebhookUnauthorized" } })
      // A refusal under /v1 is in OpenAI's shape, chunked too.
      const completion = yield* chunked("POST", "/v1/chat/completions", JSON.stringify({ model: "echo", messages: [] }))
      expect(completion).toMatchObject({ _tag: "response", status: 401, json: { error: { code: "invalid_api_key" } } })
    }))

  it.scopedLive("public routes stay open: health, the inspector's page shell, webhooks (signed on their own)", () =>
    Effect.gen(function*() {
      const root = yield* authProject()
      const server = yield* startServer(root)
      expect((yield* http(`${server.url}/health`)).status).toBe(200)
      const shell = yield* http(`${server.url}/runs/some-run`)
      expect(shell.status).toBe(200)
      expect(shell.headers.get("content-type")).toContain("text/html")
      // The webhook's own refusal (unsigned, to a name none listens on: told as a bad signature), not the door's.
      const hook = yield* http(`${server.url}/hooks/unknown`, { body: {} })
      expect(hook.json).toMatchObject({ _tag: "WebhookUnauthorized", message: expect.stringContaining("x-foundry-signature") })
      // `/v1` and `/mcp` are behind the same door, whatever serves them.
      const models = yield* http(`${server.url}/v1/models`)
      expect(models.status).toBe(401)
      expect(models.json).toMatchObject({ error: { code: "invalid_api_key", message: expect.stringContaining("Bearer") } })
      expect((yield* http(`${server.url}/mcp`, { body: {} })).status).toBe(401)
    }))

  it.scopedLive("a token over its rate limit gets 429 with Retry-After, in OpenAI's shape under /v1", () =>
    Effect.gen(function*() {
      const root = yield* authProject(`{ required: true, rateLimit: { requests: 3, per: "1 minute" } }`)
      const server = yield* startServer(root)
      const read = yield* issue(server.storeFile, "read")
      const other = yield* issue(server.storeFile, "read")
      for (let i = 0; i < 3; i++) expect((yield* http(`${server.url}/api/runs`, { headers: bearer(read.token) })).status).toBe(200)
      const limited = yield* http(`${server.url}/api/runs`, { headers: bearer(read.token) })
      expect(limited.status).toBe(429)
      const retryAfter = Number(limited.headers.get("retry-after"))
      expect(retryAfter).toBeGreaterThanOrEqual(1)
      expect(retryAfter).toBeLessThanOrEqual(20)
      expect(limited.json).toMatchObject({ _tag: "RateLimited", retryAfter })
      const openAi = yield* http(`${server.url}/v1/models`, { headers: bearer(read.token) })
      expect(openAi.status).toBe(429)
      expect(openAi.json).toMatchObject({ error: { code: "rate_limit_exceeded", type: "requests" } })
      // The limit is per token.
      expect((yield* http(`${server.url}/api/runs`, { headers: bearer(other.token) })).status).toBe(200)
    }))

  it.scopedLive("the inspector signs in: POST /api/session sets an HttpOnly, SameSite=Strict cookie that authenticates", () =>
    Effect.gen(function*() {
      const root = yield* authProject()
      const server = yield* startServer(root)
      const run = yield* issue(server.storeFile, "run")
      const wrong = yield* http(`${server.url}/api/session`, { body: { token: "fdy_nope" } })
      expect(wrong.status).toBe(401)
      expect(wrong.headers.get("set-cookie")).toBeNull()
      const signedIn = yield* http(`${server.url}/api/session`, { body: { token: run.token } })
      expect(signedIn.status).toBe(204)
      const cookie = signedIn.headers.get("set-cookie") ?? ""
      expect(cookie).toMatch(new RegExp(`^foundry_session_${new URL(server.url).port}=`))
      expect(cookie).toMatch(/HttpOnly/i)
      expect(cookie).toMatch(/SameSite=Strict/i)
      const session = cookie.split(";")[0] ?? ""
      expect((yield* http(`${server.url}/api/runs`, { headers: { cookie: session } })).status).toBe(200)
      expect((yield* http(`${server.url}/api/runs`, { body: { agent: "echo", message: "hi" }, headers: { cookie: session } })).status).toBe(202)
      const who = yield* http(`${server.url}/api/session`, { headers: { cookie: session } })
      expect(who.json).toMatchObject({ mode: "tokens", token: { id: run.id, scope: "run" } })
      expect((yield* http(`${server.url}/api/session`)).json).toEqual({ mode: "tokens", token: null })
      const signedOut = yield* http(`${server.url}/api/session`, { method: "DELETE", headers: { cookie: session } })
      expect(signedOut.headers.get("set-cookie")).toMatch(/foundry_session_\d+=;.*Max-Age=0/i)
      expect((yield* http(`${server.url}/api/runs`, { headers: { cookie: session } })).status).toBe(401)
    }))

  it.scopedLive("the OpenAPI document declares the bearer scheme, each route's scope, and public routes without security", () =>
    Effect.gen(function*() {
      const root = yield* authProject()
      const server = yield* startServer(root)
      const read = yield* issue(server.storeFile, "read")
      const response = yield* http(`${server.url}/api/openapi.json`, { headers: bearer(read.token) })
      expect(response.status).toBe(200)
      const spec = response.json as {
        components: { securitySchemes: Record<string, unknown>; schemas: Record<string, unknown> }
        security: unknown
        paths: Record<string, Record<string, { security?: unknown; "x-foundry-scope"?: string; responses: Record<string, unknown> }>>
      }
      expect(spec.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" })
      expect(spec.components.securitySchemes.session).toMatchObject({ type: "apiKey", in: "cookie", name: `foundry_session_${new URL(server.url).port}` })
      expect(spec.security).toEqual([{ bearer: [] }, { session: [] }])
      expect(spec.paths["/api/runs"]?.post).toMatchObject({ "x-foundry-scope": "run", security: [{ bearer: [] }, { session: [] }] })
      expect(Object.keys(spec.paths["/api/runs"]?.post?.responses ?? {})).toEqual(expect.arrayContaining(["401", "403", "429"]))
      expect(spec.paths["/api/runs"]?.get?.["x-foundry-scope"]).toBe("read")
      expect(spec.paths["/api/tokens"]?.get?.["x-foundry-scope"]).toBe("admin")
      expect(spec.paths["/health"]?.get?.security).toEqual([])
      expect(spec.components.schemas.Forbidden).toBeDefined()
    }))
})

describe("a server on loopback without auth required", () => {
  it.scopedLive("stays open as before, tokens or not", () =>
    Effect.gen(function*() {
      const root = yield* authProject("{}")
      const server = yield* startServer(root)
      yield* issue(server.storeFile, "read")
      expect((yield* http(`${server.url}/api/runs`, { body: { agent: "echo", message: "hi" } })).status).toBe(202)
      expect((yield* http(`${server.url}/api/tokens`)).status).toBe(200)
    }))

  it.scopedLive("a token sent anyway is held to it: an unknown one gets 401, one without the scope 403", () =>
    Effect.gen(function*() {
      const root = yield* authProject("{}")
      const server = yield* startServer(root)
      const read = yield* issue(server.storeFile, "read")
      const run = yield* issue(server.storeFile, "run")
      const submit = (token: string) =>
        http(`${server.url}/api/runs`, { body: { agent: "echo", message: "hi" }, headers: { authorization: `Bearer ${token}` } })
      expect((yield* submit("fdy_bogus_secret")).status).toBe(401)
      // An OpenAI client's API key, whatever it is, is none of Foundry's tokens: the door stays open to it.
      expect((yield* submit("sk-anything")).status).toBe(202)
      const forbidden = yield* submit(read.token)
      expect(forbidden.status).toBe(403)
      expect(forbidden.json).toMatchObject({ _tag: "Forbidden", required: "run", scope: "read" })
      expect((yield* submit(run.token)).status).toBe(202)
    }))
})
