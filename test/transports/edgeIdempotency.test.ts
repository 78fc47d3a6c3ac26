/**
 * `Idempotency-Key` on `POST /api/runs`: the same request again answers with the first run; the
 * same key with a different request is 422, never the first run, also when both race.
 */
import Database from "better-sqlite3"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Scripted from "../../src/models/scripted.js"
import { http, startServer } from "../support/server.js"
import { agentFile, tempProject } from "../support/tempProject.js"

const project = { "agents/echo/agent.ts": agentFile() }
const model = Scripted.make(() => ({ text: "ok" }))

const submit = (url: string, key: string, body: Record<string, unknown>) =>
  http(`${url}/api/runs`, { body, headers: { "idempotency-key": key } })
const runCount = (url: string) => Effect.map(http(`${url}/api/runs`), (r) => (r.json as ReadonlyArray<unknown>).length)

describe("Idempotency-Key", () => {
  it.scopedLive("the same request again gets the first run; another request under the key gets 422", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project), { model })
      const first = yield* submit(server.url, "k-1", { agent: "echo", message: "hello" })
      expect(first.status).toBe(202)
      const { runId } = first.json as { runId: string }
      const again = yield* submit(server.url, "k-1", { agent: "echo", message: "hello", instance: "default" })
      expect(again.status).toBe(202)
      expect((again.json as { runId: string }).runId).toBe(runId)
      for (const other of [{ agent: "echo", message: "goodbye" }, { agent: "echo", message: "hello", instance: "other" }]) {
        const reused = yield* submit(server.url, "k-1", other)
        expect(reused.status).toBe(422)
        expect(reused.json).toEqual({
          _tag: "IdempotencyKeyReused",
          idempotencyKey: "k-1",
          runId,
          message: expect.stringContaining("use a new key for a new request")
        })
      }
      expect(yield* runCount(server.url)).toBe(1)
      // The submission's fingerprint is kept with its key.
      const db = new Database(server.storeFile, { readonly: true })
      const row = db.prepare("SELECT idempotency_key, idempotency_fingerprint FROM foundry_runs WHERE id = ?").get(runId) as Record<string, unknown>
      db.close()
      expect(row.idempotency_key).toBe("k-1")
      expect(row.idempotency_fingerprint).toMatch(/^[0-9a-f]{64}$/)
    }))

  it.scopedLive("a key in the form of Foundry's own (a schedule's firing, an agent's timer, a webhook's delivery) is refused: it would take that submission's place", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project), { model })
      for (const key of ["schedule:daily-review@1767254400000", "agent:tmr_0123456789abcdef0123@1", "delivery:tickets:evt-1:urgent:default"]) {
        const refused = yield* submit(server.url, key, { agent: "echo", message: "hello" })
        expect(refused.status).toBe(400)
        expect(refused.text).toContain("does not begin with schedule:, agent:, delivery:")
        const v1 = yield* http(`${server.url}/v1/chat/completions`, {
          body: { model: "echo", messages: [{ role: "user", content: "hello" }] },
          headers: { "idempotency-key": key }
        })
        expect(v1.status).toBe(400)
        expect(v1.json).toMatchObject({ error: { message: expect.stringContaining("does not begin with schedule:") } })
      }
      expect(yield* runCount(server.url)).toBe(0)
      expect((yield* submit(server.url, "my-schedule:1", { agent: "echo", message: "hello" })).status).toBe(202)
    }))

  it.scopedLive("the conversation a request continues is part of it", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project), { model })
      const { conversationId } = (yield* http(`${server.url}/api/runs`, { body: { agent: "echo", message: "start" } })).json as { conversationId: string }
      const continued = yield* submit(server.url, "k-2", { agent: "echo", message: "more", conversation: conversationId })
      expect(continued.status).toBe(202)
      expect((yield* submit(server.url, "k-2", { agent: "echo", message: "more", conversation: conversationId })).status).toBe(202)
      expect((yield* submit(server.url, "k-2", { agent: "echo", message: "more" })).status).toBe(422)
      expect(yield* runCount(server.url)).toBe(2)
    }))

  it.scopedLive("two different requests racing under one key: one run, and the other is 422", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project), { model })
      const answers = yield* Effect.all(
        Array.from({ length: 6 }, (_, i) => submit(server.url, "k-race", { agent: "echo", message: i % 2 === 0 ? "even" : "odd" })),
        { concurrency: "unbounded" }
      )
      const accepted = answers.filter((a) => a.status === 202)
      const refused = answers.filter((a) => a.status === 422)
      expect(accepted.length + refused.length).toBe(6)
      expect(accepted.length).toBe(3)
      expect(new Set(accepted.map((a) => (a.json as { runId: string }).runId)).size).toBe(1)
      expect(yield* runCount(server.url)).toBe(1)
    }))
})
