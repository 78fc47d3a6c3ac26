import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Either, Layer, Option } from "effect"
import { accessMode, exposedNames, isLoopback } from "../../src/auth/accessMode.js"
import { routeAccess } from "../../src/auth/routeAccess.js"
import { hashToken, tokenId } from "../../src/auth/token.js"
import * as TokenStorage from "../../src/auth/TokenStorage.js"
import * as PgDatabase from "../../src/durable/PgDatabase.js"
import { freshSchema, skipPostgres } from "../support/postgres.js"
import { sqliteStore } from "../support/sqliteStore.js"

/** What every backend must do with tokens. */
const storageBehaviour = Effect.gen(function*() {
  const tokens = yield* TokenStorage.TokenStorage
  const sql = yield* SqlClient.SqlClient
  expect(yield* tokens.countActive).toBe(0)
  const { record, token } = yield* tokens.create({ name: "ci", scope: "run" })
  expect(token).toMatch(/^fdy_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/)
  expect(Option.getOrThrow(tokenId(token))).toBe(record.id)
  // The store holds the hash, never the token.
  const rows = yield* sql<{ readonly hash: string }>`SELECT * FROM foundry_tokens`
  expect(rows).toHaveLength(1)
  expect(JSON.stringify(rows)).not.toContain(token.slice(21))
  expect(rows[0]?.hash).toBe(hashToken(token))
  expect(yield* tokens.countActive).toBe(1)

  const verified = yield* tokens.verify(token)
  expect(Option.getOrThrow(verified)).toMatchObject({ id: record.id, scope: "run", lastUsedAt: expect.any(Number) })
  // The same id with another secret, or a text that is not a token, is nobody.
  expect(Option.isNone(yield* tokens.verify(`fdy_${record.id}_${"x".repeat(43)}`))).toBe(true)
  expect(Option.isNone(yield* tokens.verify("not a token"))).toBe(true)

  const revoked = Option.getOrThrow(yield* tokens.revoke(record.id))
  expect(revoked.revokedAt).toEqual(expect.any(Number))
  expect(Option.isNone(yield* tokens.verify(token))).toBe(true)
  expect(yield* tokens.countActive).toBe(0)
  // Revoking again keeps the first time.
  expect(Option.getOrThrow(yield* tokens.revoke(record.id)).revokedAt).toBe(revoked.revokedAt)
  expect(Option.isNone(yield* tokens.revoke("0123456789abcdef"))).toBe(true)
  const listed = yield* tokens.list
  expect(listed.map((t) => [t.id, t.name, t.scope])).toEqual([[record.id, "ci", "run"]])
})

describe("token storage", () => {
  it.scoped("on SQLite: a token is stored hashed, verified, revoked for good", () =>
    storageBehaviour.pipe(Effect.provide(TokenStorage.layer.pipe(Layer.provideMerge(sqliteStore("tokens").layer)))))

  it.scoped.skipIf(skipPostgres)("on PostgreSQL: the same", () =>
    Effect.gen(function*() {
      const url = yield* freshSchema
      yield* storageBehaviour.pipe(Effect.provide(TokenStorage.layer.pipe(Layer.provideMerge(PgDatabase.layer(url)))))
    }))
})

describe("what a route needs", () => {
  it("read for GETs and streams, run for changes, admin for tokens and schedule changes, nothing for public routes", () => {
    expect(routeAccess("GET", "/api/runs?limit=5")).toBe("read")
    expect(routeAccess("GET", "/api/events")).toBe("read")
    expect(routeAccess("POST", "/api/runs")).toBe("run")
    expect(routeAccess("POST", "/api/runs/r1/cancel")).toBe("run")
    expect(routeAccess("POST", "/api/runs/r1/steer")).toBe("run")
    expect(routeAccess("POST", "/api/approvals/a1")).toBe("run")
    expect(routeAccess("POST", "/v1/chat/completions")).toBe("run")
    expect(routeAccess("GET", "/v1/models")).toBe("read")
    expect(routeAccess("POST", "/mcp")).toBe("run")
    expect(routeAccess("GET", "/mcp")).toBe("run")
    expect(routeAccess("GET", "/api/tokens")).toBe("admin")
    expect(routeAccess("DELETE", "/api/tokens/abc")).toBe("admin")
    expect(routeAccess("GET", "/api/schedules")).toBe("read")
    expect(routeAccess("POST", "/api/schedules/nightly/trigger")).toBe("admin")
    expect(routeAccess("GET", "/")).toBe("public")
    expect(routeAccess("GET", "/runs/r1")).toBe("public")
    expect(routeAccess("GET", "/assets/inspector.js")).toBe("public")
    expect(routeAccess("GET", "/health")).toBe("public")
    expect(routeAccess("POST", "/hooks/orders")).toBe("public")
    expect(routeAccess("POST", "/api/session")).toBe("public")
    expect(routeAccess("GET", "/api/session")).toBe("public")
    // Spellings that route to the same place need the same.
    expect(routeAccess("GET", "/api/%74okens")).toBe("admin")
    expect(routeAccess("GET", "//api//tokens/")).toBe("admin")
    // Not public: anything that is not listed.
    expect(routeAccess("GET", "/assets/other.js")).toBe("read")
    expect(routeAccess("POST", "/runs")).toBe("run")
  })
})

describe("whether the server may start", () => {
  it("loopback is open unless required; any other address needs a token, and refuses naming the fix without one", () => {
    for (const host of ["127.0.0.1", "localhost", "::1", "127.0.0.2", "[::1]"]) expect(isLoopback(host)).toBe(true)
    for (const host of ["0.0.0.0", "::", "192.168.1.10", "example.com", "::ffff:10.0.0.1"]) expect(isLoopback(host)).toBe(false)
    expect(accessMode({ exposedAs: [], host: "127.0.0.1", required: false, activeTokens: 0 })).toEqual(Either.right("open"))
    expect(accessMode({ exposedAs: [], host: "127.0.0.1", required: false, activeTokens: 3 })).toEqual(Either.right("open"))
    expect(accessMode({ exposedAs: [], host: "127.0.0.1", required: true, activeTokens: 0 })).toEqual(Either.right("tokens"))
    expect(accessMode({ exposedAs: [], host: "0.0.0.0", required: false, activeTokens: 1 })).toEqual(Either.right("tokens"))
    const refused = accessMode({ exposedAs: [], host: "0.0.0.0", required: false, activeTokens: 0 })
    expect(Either.isLeft(refused)).toBe(true)
    if (Either.isLeft(refused)) {
      expect(refused.left.message).toContain("refusing to listen on 0.0.0.0")
      expect(refused.left.message).toContain("foundry token create --scope admin")
    }
    // Names a proxy serves a loopback server by expose it as much as a public address does.
    expect(exposedNames(["127.0.0.1:4141", "localhost", "[::1]:80", "foundry.example.com", "10.0.0.5:443"])).toEqual(["foundry.example.com", "10.0.0.5:443"])
    expect(accessMode({ exposedAs: ["foundry.example.com"], host: "127.0.0.1", required: false, activeTokens: 1 })).toEqual(Either.right("tokens"))
    const proxied = accessMode({ exposedAs: ["foundry.example.com"], host: "127.0.0.1", required: false, activeTokens: 0 })
    expect(Either.isLeft(proxied) ? proxied.left.message : "").toContain("refusing to serve foundry.example.com (server.allowedHosts)")
  })
})
