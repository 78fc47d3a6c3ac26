/**
 * What a request admitted on a token keeps open ends when the token is revoked: the events feed
 * (a stream in the response's body) and a run's event stream (written by its handler), followed
 * with `fetch` while the run waits on a person. Revoked over the API, they end at once; revoked by
 * another process on the store, within the server's look for revocations (two seconds). Opened
 * with the inspector's session, they also end with the session: at once at sign-out, and within
 * that look when it ends in the store (another process's sign-out, or its expiry).
 */
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { hashToken } from "../../src/auth/token.js"
import * as SqliteDatabase from "../../src/durable/SqliteDatabase.js"
import { durableProject, plan } from "../support/durableProject.js"
import { readToEnd } from "../support/eventFeed.js"
import { plannedModel } from "../support/plannedModel.js"
import { http, runIdOf, startServer } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"
import { bearer, issue, revokeIn } from "./support.js"

/** A stream at `path` opened with `token` (or these headers), its first chunk read, and the rest read on until it ends. */
const openStream = (url: string, path: string, token: string | Record<string, string>) =>
  Effect.promise(async () => {
    const credential = typeof token === "string" ? bearer(token) : token
    const response = await fetch(`${url}${path}`, { headers: { ...credential, accept: "text/event-stream" } })
    const reader = response.body?.getReader()
    const first = await reader?.read()
    return { status: response.status, first: first?.done === false, ended: readToEnd(reader) }
  })

/** Whether `stream` has ended, or ends within `within`. */
const endsWithin = (stream: { readonly ended: Promise<string> }, within: `${number} seconds`) =>
  Effect.promise(() => stream.ended).pipe(Effect.timeout(within), Effect.option, Effect.map(Option.isSome))

const setup = Effect.gen(function*() {
  const root = yield* tempProject(durableProject(join(tmpdir(), `foundry-revoked-${randomUUID()}.log`), "{ auth: { required: true } }"))
  const server = yield* startServer(root, { model: plannedModel })
  const admin = yield* issue(server.storeFile, "admin")
  // A run that waits on a person's approval: its event stream stays open until the run ends.
  const submitted = yield* http(`${server.url}/api/runs`, {
    body: { agent: "worker", message: plan({ calls: [{ name: "transfer", arguments: { amount: 5 } }] }) },
    headers: bearer(admin.token)
  })
  expect(submitted.status).toBe(202)
  return { ...server, admin, runId: runIdOf(submitted.json) }
})

describe("streams opened with a token end when it is revoked", () => {
  it.scopedLive("revoked over the API: the feed and a run's event stream end at once, and opening them again gets 401", () =>
    Effect.gen(function*() {
      const { admin, runId, storeFile, url } = yield* setup
      const read = yield* issue(storeFile, "read")
      const feed = yield* openStream(url, "/api/events", read.token)
      const run = yield* openStream(url, `/api/runs/${runId}/events`, read.token)
      expect([feed.status, feed.first, run.status, run.first]).toEqual([200, true, 200, true])
      // Open while the token is good: the run waits on a person, the feed on what comes next.
      expect(yield* Effect.all([endsWithin(feed, "1 seconds"), endsWithin(run, "1 seconds")])).toEqual([false, false])
      const revoked = yield* http(`${url}/api/tokens/${read.id}`, { method: "DELETE", headers: bearer(admin.token) })
      expect(revoked.status).toBe(200)
      expect(yield* Effect.all([endsWithin(feed, "1 seconds"), endsWithin(run, "1 seconds")])).toEqual([true, true])
      const again = yield* openStream(url, "/api/events", read.token)
      expect(again.status).toBe(401)
    }))

  it.scopedLive("revoked by another process on the store: both end within the server's look; another token's stay open", () =>
    Effect.gen(function*() {
      const { admin, runId, storeFile, url } = yield* setup
      const read = yield* issue(storeFile, "read")
      const feed = yield* openStream(url, "/api/events", read.token)
      const run = yield* openStream(url, `/api/runs/${runId}/events`, read.token)
      const kept = yield* openStream(url, `/api/runs/${runId}/events`, admin.token)
      expect([feed.first, run.first, kept.first]).toEqual([true, true, true])
      expect(Option.isSome(yield* revokeIn(storeFile, read.id))).toBe(true)
      expect(yield* Effect.all([endsWithin(feed, "6 seconds"), endsWithin(run, "6 seconds")], { concurrency: 2 })).toEqual([true, true])
      expect(yield* endsWithin(kept, "1 seconds")).toBe(false)
    }))
})

/** Signs in at `url` with `token`: the `Cookie` header a browser then sends. */
const signIn = (url: string, token: string) =>
  Effect.gen(function*() {
    const answer = yield* http(`${url}/api/session`, { body: { token } })
    expect(answer.status).toBe(204)
    const [pair = ""] = (answer.headers.getSetCookie()[0] ?? "").split(";")
    return { cookie: pair }
  })

/** Runs `statement` on the store at `storeFile`, as another process on it would. */
const inStore = (storeFile: string, statement: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>) =>
  Effect.scoped(
    Effect.flatMap(SqlClient.SqlClient, statement).pipe(
      Effect.provide(SqliteDatabase.layer(storeFile).pipe(Layer.provide(NodeContext.layer))),
      Effect.orDie
    )
  )

describe("streams opened with the inspector's session end when it ends", () => {
  it.scopedLive("signed out: the feed and a run's event stream end at once; a bearer token's stay open", () =>
    Effect.gen(function*() {
      const { runId, storeFile, url } = yield* setup
      const read = yield* issue(storeFile, "read")
      const session = yield* signIn(url, read.token)
      const feed = yield* openStream(url, "/api/events", session)
      const run = yield* openStream(url, `/api/runs/${runId}/events`, session)
      const kept = yield* openStream(url, "/api/events", read.token)
      expect([feed.status, feed.first, run.status, run.first, kept.first]).toEqual([200, true, 200, true, true])
      expect(yield* Effect.all([endsWithin(feed, "1 seconds"), endsWithin(run, "1 seconds")])).toEqual([false, false])
      const out = yield* http(`${url}/api/session`, { method: "DELETE", headers: session })
      expect(out.status).toBe(204)
      expect(yield* Effect.all([endsWithin(feed, "1 seconds"), endsWithin(run, "1 seconds")])).toEqual([true, true])
      // The token itself was not revoked: what it opened as a bearer token runs on.
      expect(yield* endsWithin(kept, "1 seconds")).toBe(false)
      expect((yield* openStream(url, "/api/events", session)).status).toBe(401)
    }))

  it.scopedLive("signed out by another process on the store: the feed ends within the server's look; another session's stays open", () =>
    Effect.gen(function*() {
      const { storeFile, url } = yield* setup
      const read = yield* issue(storeFile, "read")
      const ending = yield* signIn(url, read.token)
      const staying = yield* signIn(url, read.token)
      const feed = yield* openStream(url, "/api/events", ending)
      const kept = yield* openStream(url, "/api/events", staying)
      expect([feed.first, kept.first]).toEqual([true, true])
      // What another process's DELETE /api/session does: the session's row is deleted.
      const secret = ending.cookie.slice(ending.cookie.indexOf("=") + 1)
      yield* inStore(storeFile, (sql) => sql`DELETE FROM foundry_sessions WHERE hash = ${hashToken(secret)}`)
      expect(yield* endsWithin(feed, "6 seconds")).toBe(true)
      expect(yield* endsWithin(kept, "1 seconds")).toBe(false)
    }))

  it.scopedLive("expired: the feed ends within the server's look once the session's end has passed", () =>
    Effect.gen(function*() {
      const { storeFile, url } = yield* setup
      const read = yield* issue(storeFile, "read")
      const session = yield* signIn(url, read.token)
      const feed = yield* openStream(url, "/api/events", session)
      expect(feed.first).toBe(true)
      expect(yield* endsWithin(feed, "1 seconds")).toBe(false)
      // Twelve hours on, as the store sees it.
      yield* inStore(storeFile, (sql) => sql`UPDATE foundry_sessions SET expires_at = expires_at - 43200000`)
      expect(yield* endsWithin(feed, "6 seconds")).toBe(true)
      expect((yield* openStream(url, "/api/events", session)).status).toBe(401)
    }))
})
