/**
 * The inspector's sessions: signing in starts a session of its own, whose secret (never the token)
 * is the cookie, named by the server's port; it admits only as that cookie, and ends at sign-out,
 * at its expiry, or with its token, on every process on the store.
 */
import { NodeContext } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import * as TokenStorage from "../../src/auth/TokenStorage.js"
import * as PgDatabase from "../../src/durable/PgDatabase.js"
import * as SqliteDatabase from "../../src/durable/SqliteDatabase.js"
import { readToEnd } from "../support/eventFeed.js"
import { freshSchema, skipPostgres } from "../support/postgres.js"
import { http, startServer, startServerOnItsStore, type TestServer } from "../support/server.js"
import { plannedModel } from "../support/plannedModel.js"
import { agentFile, tempProject } from "../support/tempProject.js"
import { authProject, bearer, issue, revokeIn } from "./support.js"

/** A cookie a server set: its name and value. */
interface Cookie {
  readonly name: string
  readonly value: string
}

/** Signs in at `url` with `token`; the session cookie it set, and all of its `Set-Cookie` lines. */
const signIn = (url: string, token: string) =>
  Effect.gen(function*() {
    const answer = yield* http(`${url}/api/session`, { body: { token } })
    expect(answer.status).toBe(204)
    const lines = answer.headers.getSetCookie()
    const [pair = ""] = (lines[0] ?? "").split(";")
    const at = pair.indexOf("=")
    const cookie: Cookie = { name: pair.slice(0, at), value: pair.slice(at + 1) }
    return { cookie, lines }
  })

/** The `Cookie` header a browser sends holding `cookies`. */
const sending = (...cookies: ReadonlyArray<Cookie>) => ({ cookie: cookies.map(({ name, value }) => `${name}=${value}`).join("; ") })

const portOf = (server: TestServer | string) => new URL(typeof server === "string" ? server : server.url).port

describe("the inspector's session on a server that needs tokens", () => {
  it.scopedLive("GET /api/session is public: without a token it answers the mode and token null; a wrong token is still refused", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* authProject())
      const read = yield* issue(server.storeFile, "read", "dashboard")
      const anonymous = yield* http(`${server.url}/api/session`)
      expect(anonymous.status).toBe(200)
      expect(anonymous.json).toEqual({ mode: "tokens", token: null })
      const known = yield* http(`${server.url}/api/session`, { headers: bearer(read.token) })
      expect(known.json).toMatchObject({ mode: "tokens", token: { id: read.id, name: "dashboard", scope: "read" } })
      const wrong = yield* http(`${server.url}/api/session`, { headers: bearer("fdy_0000000000000000_" + "a".repeat(43)) })
      expect(wrong.status).toBe(401)
      expect(wrong.json).toMatchObject({ _tag: "Unauthorized", message: expect.stringContaining("unknown or revoked") })
    }))

  it.scopedLive("the cookie is a session of its own, named by the port, not the token; it does not work as a bearer token", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* authProject())
      const run = yield* issue(server.storeFile, "run")
      const { cookie, lines } = yield* signIn(server.url, run.token)
      expect(cookie.name).toBe(`foundry_session_${portOf(server)}`)
      expect(lines[0]).toMatch(/HttpOnly/i)
      expect(lines[0]).toMatch(/SameSite=Strict/i)
      expect(lines[0]).toMatch(/Max-Age=43200/i)
      expect(cookie.value).not.toBe(run.token)
      expect(cookie.value).not.toContain(run.token.slice(21))
      expect(cookie.value).not.toContain(run.id)
      // The cookie admits, as the token it was signed in with.
      expect((yield* http(`${server.url}/api/runs`, { headers: sending(cookie) })).status).toBe(200)
      expect((yield* http(`${server.url}/api/runs`, { body: { agent: "echo", message: "hi" }, headers: sending(cookie) })).status).toBe(202)
      expect((yield* http(`${server.url}/api/session`, { headers: sending(cookie) })).json).toMatchObject({
        mode: "tokens",
        token: { id: run.id, scope: "run" }
      })
      // Not as a bearer token: what another service on the host is sent is no API token.
      const asBearer = yield* http(`${server.url}/api/runs`, { headers: bearer(cookie.value) })
      expect(asBearer.status).toBe(401)
      expect((yield* http(`${server.url}/v1/models`, { headers: bearer(cookie.value) })).status).toBe(401)
      // Nor is the token taken from the cookie.
      expect((yield* http(`${server.url}/api/runs`, { headers: sending({ name: cookie.name, value: run.token }) })).status).toBe(401)
      expect((yield* http(`${server.url}/api/runs`, { headers: sending({ name: "foundry_session", value: run.token }) })).status).toBe(401)
      // Sessions are not tokens: none is listed.
      const admin = yield* issue(server.storeFile, "admin")
      const listed = (yield* http(`${server.url}/api/tokens`, { headers: bearer(admin.token) })).json
      expect(listed).toHaveLength(2)
    }))

  it.scopedLive("after sign-out the cookie's value no longer admits; an old cookie holding the token is expired", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* authProject())
      const run = yield* issue(server.storeFile, "run")
      const { cookie } = yield* signIn(server.url, run.token)
      expect((yield* http(`${server.url}/api/runs`, { headers: sending(cookie) })).status).toBe(200)
      const legacy = { name: "foundry_session", value: run.token }
      const out = yield* http(`${server.url}/api/session`, { method: "DELETE", headers: sending(cookie, legacy) })
      expect(out.status).toBe(204)
      const expired = out.headers.getSetCookie()
      expect(expired).toEqual(expect.arrayContaining([
        expect.stringMatching(new RegExp(`^${cookie.name}=;.*Max-Age=0`, "i")),
        expect.stringMatching(/^foundry_session=;.*Max-Age=0/i)
      ]))
      // A copy of the cookie kept from before (by whatever else on the host was sent it) is refused.
      const replayed = yield* http(`${server.url}/api/runs`, { headers: sending(cookie) })
      expect(replayed.status).toBe(401)
      expect(replayed.json).toMatchObject({ message: expect.stringContaining("sign in again") })
      expect((yield* http(`${server.url}/api/session`, { headers: sending(cookie) })).json).toEqual({ mode: "tokens", token: null })
      // The token itself still works: signing out ended the session only.
      expect((yield* http(`${server.url}/api/runs`, { headers: bearer(run.token) })).status).toBe(200)
    }))

  it.scopedLive("revoking the token ends its sessions, over the API or from another process on the store", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* authProject())
      const admin = yield* issue(server.storeFile, "admin")
      const viaApi = yield* issue(server.storeFile, "read")
      const viaStore = yield* issue(server.storeFile, "read")
      const first = (yield* signIn(server.url, viaApi.token)).cookie
      const second = (yield* signIn(server.url, viaApi.token)).cookie
      const third = (yield* signIn(server.url, viaStore.token)).cookie
      for (const cookie of [first, second, third]) expect((yield* http(`${server.url}/api/runs`, { headers: sending(cookie) })).status).toBe(200)
      expect((yield* http(`${server.url}/api/tokens/${viaApi.id}`, { method: "DELETE", headers: bearer(admin.token) })).status).toBe(200)
      expect((yield* http(`${server.url}/api/runs`, { headers: sending(first) })).status).toBe(401)
      expect((yield* http(`${server.url}/api/runs`, { headers: sending(second) })).status).toBe(401)
      expect((yield* http(`${server.url}/api/runs`, { headers: sending(third) })).status).toBe(200)
      yield* revokeIn(server.storeFile, viaStore.id)
      expect((yield* http(`${server.url}/api/runs`, { headers: sending(third) })).status).toBe(401)
    }))

  it.scopedLive("a session ends when it expires", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* authProject())
      const read = yield* issue(server.storeFile, "read")
      const { cookie } = yield* signIn(server.url, read.token)
      expect((yield* http(`${server.url}/api/runs`, { headers: sending(cookie) })).status).toBe(200)
      // Twelve hours on, as the store sees it.
      yield* Effect.scoped(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql`UPDATE foundry_sessions SET expires_at = expires_at - 43200000`).pipe(
          Effect.provide(SqliteDatabase.layer(server.storeFile).pipe(Layer.provide(NodeContext.layer)))
        )
      )
      expect((yield* http(`${server.url}/api/runs`, { headers: sending(cookie) })).status).toBe(401)
    }))

  it.scopedLive("two servers on one host (different ports) keep separate sessions in a browser's one cookie jar", () =>
    Effect.gen(function*() {
      const a = yield* startServer(yield* authProject())
      const b = yield* startServer(yield* authProject())
      const onA = yield* issue(a.storeFile, "read", "a")
      const onB = yield* issue(b.storeFile, "read", "b")
      // A browser keeps cookies by host and name, not port: both servers are sent whatever both set.
      const jar = new Map<string, string>()
      for (const [server, token] of [[a, onA.token], [b, onB.token]] as const) {
        const { cookie } = yield* signIn(server.url, token)
        jar.set(cookie.name, cookie.value)
      }
      expect(jar.size).toBe(2)
      const all = () => sending(...[...jar].map(([name, value]) => ({ name, value })))
      expect((yield* http(`${a.url}/api/session`, { headers: all() })).json).toMatchObject({ token: { id: onA.id, name: "a" } })
      expect((yield* http(`${b.url}/api/session`, { headers: all() })).json).toMatchObject({ token: { id: onB.id, name: "b" } })
      // Signing out of one leaves the other signed in.
      yield* http(`${a.url}/api/session`, { method: "DELETE", headers: all() })
      jar.delete(`foundry_session_${portOf(a)}`)
      expect((yield* http(`${b.url}/api/runs`, { headers: all() })).status).toBe(200)
      expect((yield* http(`${a.url}/api/runs`, { headers: all() })).status).toBe(401)
    }))

  it.scopedLive("the OpenAPI document names the session cookie as this server names it", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* authProject())
      const read = yield* issue(server.storeFile, "read")
      const spec = (yield* http(`${server.url}/api/openapi.json`, { headers: bearer(read.token) })).json as {
        components: { securitySchemes: Record<string, unknown> }
        paths: Record<string, Record<string, { security?: unknown }>>
      }
      expect(spec.components.securitySchemes.session).toMatchObject({ type: "apiKey", in: "cookie", name: `foundry_session_${portOf(server)}` })
      expect(spec.paths["/api/session"]?.get?.security).toEqual([])
    }))
})

describe.skipIf(skipPostgres)("sessions on a PostgreSQL store shared by two processes", () => {
  it.scopedLive("a session signed in on one is known to the other, and ends on both at sign-out and with its token", () =>
    Effect.gen(function*() {
      const { a, admin, b } = yield* twoServers
      const made = yield* http(`${a}/api/tokens`, { body: { scope: "read", name: "shared" }, headers: bearer(admin) })
      const token = (made.json as { token: string; id: string })
      const onB = (cookie: Cookie) => sending({ name: `foundry_session_${portOf(b)}`, value: cookie.value })

      const first = (yield* signIn(a, token.token)).cookie
      expect((yield* http(`${b}/api/session`, { headers: onB(first) })).json).toMatchObject({ token: { id: token.id, name: "shared" } })
      expect((yield* http(`${b}/api/runs`, { headers: onB(first) })).status).toBe(200)
      yield* http(`${a}/api/session`, { method: "DELETE", headers: sending(first) })
      expect((yield* http(`${b}/api/runs`, { headers: onB(first) })).status).toBe(401)

      const second = (yield* signIn(a, token.token)).cookie
      expect((yield* http(`${b}/api/runs`, { headers: onB(second) })).status).toBe(200)
      expect((yield* http(`${b}/api/tokens/${token.id}`, { method: "DELETE", headers: bearer(admin) })).status).toBe(200)
      expect((yield* http(`${a}/api/runs`, { headers: sending(second) })).status).toBe(401)
    }))

  it.scopedLive("the event feed a session opened on one ends when it signs out on the other", () =>
    Effect.gen(function*() {
      const { a, admin, b } = yield* twoServers
      const { cookie } = yield* signIn(a, admin)
      const onB = sending({ name: `foundry_session_${portOf(b)}`, value: cookie.value })
      const feed = yield* Effect.promise(async () => {
        const response = await fetch(`${b}/api/events`, { headers: { ...onB, accept: "text/event-stream" } })
        const reader = response.body?.getReader()
        const first = await reader?.read()
        return { status: response.status, first: first?.done === false, ended: readToEnd(reader) }
      })
      expect([feed.status, feed.first]).toEqual([200, true])
      const endsWithin = (within: `${number} seconds`) =>
        Effect.promise(() => feed.ended).pipe(Effect.timeout(within), Effect.option, Effect.map(Option.isSome))
      expect(yield* endsWithin("1 seconds")).toBe(false)
      expect((yield* http(`${a}/api/session`, { method: "DELETE", headers: sending(cookie) })).status).toBe(204)
      // Found by b's look in the store (every two seconds).
      expect(yield* endsWithin("6 seconds")).toBe(true)
    }))
})

/**
 * Two servers needing tokens on one fresh PostgreSQL store, and an admin token made in it (a token
 * made over a server's API needs one to start with).
 */
const twoServers = Effect.gen(function*() {
  const url = yield* freshSchema
  const root = yield* tempProject({
    "agents/echo/agent.ts": agentFile(),
    "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ auth: { required: true }, store: { postgres: ${JSON.stringify(url)} } })\n`
  })
  const a = yield* startServerOnItsStore(root, plannedModel)
  const b = yield* startServerOnItsStore(root, plannedModel)
  return { a, b, admin: yield* issueOnPostgres(url) }
})

/** An admin token made straight in the PostgreSQL store at `url`, as `foundry token create` does. */
const issueOnPostgres = (url: string) =>
  Effect.scoped(
    Effect.gen(function*() {
      const tokens = yield* TokenStorage.TokenStorage
      return (yield* tokens.create({ name: "admin", scope: "admin" })).token
    }).pipe(Effect.provide(TokenStorage.layer.pipe(Layer.provide(PgDatabase.layer(url)))))
  )
