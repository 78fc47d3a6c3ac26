/**
 * Signed webhooks: the signature covers `x-foundry-timestamp`, `x-event-id` and the body; a
 * delivery outside the tolerance window, under another event id, or replayed as it was, is 401;
 * the body-only form only where `legacySignatures` says so. A delivery whose claim is still
 * `processing` is never run a second time.
 */
import Database from "better-sqlite3"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Scripted from "../../src/models/scripted.js"
import { staleClaimAfterMs } from "../../src/durable/DeliveryStorage.js"
import { sign, signedPayload } from "../../src/triggers/webhookSignature.js"
import { http, startServer } from "../support/server.js"
import { agentFile, tempProject } from "../support/tempProject.js"

const secret = "s3cret"
const project = (options: { readonly config?: string; readonly playbook?: string } = {}) => ({
  "agents/triage/agent.ts": agentFile(),
  "playbooks/tickets.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import triage from "../agents/triage/agent.js"
export default definePlaybook({
  on: webhook("tickets", Schema.Struct({ id: Schema.String })),
  agent: triage,
  message: (ticket) => "ticket " + ticket.id,
  ${options.playbook ?? ""}
})
`,
  "foundry.config.ts": `import { defineConfig } from "foundry"
export default defineConfig({ webhooks: { tickets: { secret: "${secret}", ${options.config ?? ""} } } })
`
})
const model = Scripted.make(() => ({ text: "handled" }))
const body = JSON.stringify({ id: "t-1" })
const now = () => Math.floor(Date.now() / 1000)

/** The headers of a delivery signed the current way. */
const signed = (eventId: string, timestamp = now(), signedBody = body) => ({
  "x-foundry-timestamp": String(timestamp),
  "x-event-id": eventId,
  "x-foundry-signature": sign(secret, signedPayload(timestamp, eventId, signedBody))
})

const deliver = (url: string, headers: Record<string, string>, sent = body) => http(`${url}/hooks/tickets`, { body: sent, headers })
const runCount = (url: string) => Effect.map(http(`${url}/api/runs`), (r) => (r.json as ReadonlyArray<unknown>).length)

describe("webhook signatures", () => {
  it.scopedLive("a delivery signed over timestamp, event id and body is accepted; another event id under that signature is not", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project()), { model })
      const headers = signed("evt-1")
      expect((yield* deliver(server.url, headers)).status).toBe(202)
      // The old attack: the same signature under a new event id.
      const renamed = yield* deliver(server.url, { ...headers, "x-event-id": "evt-2" })
      expect(renamed.status).toBe(401)
      expect(renamed.json).toMatchObject({ _tag: "WebhookUnauthorized", message: expect.stringContaining("does not match x-foundry-timestamp, x-event-id and the body") })
      // Or a shifted timestamp.
      const shifted = yield* deliver(server.url, { ...headers, "x-foundry-timestamp": String(Number(headers["x-foundry-timestamp"]) + 1) })
      expect(shifted.status).toBe(401)
      const noEventId = yield* deliver(server.url, { "x-foundry-timestamp": headers["x-foundry-timestamp"], "x-foundry-signature": headers["x-foundry-signature"] })
      expect(noEventId.status).toBe(401)
      expect(noEventId.text).toContain("missing x-event-id")
      const notSeconds = yield* deliver(server.url, { ...headers, "x-foundry-timestamp": "yesterday" })
      expect(notSeconds.text).toContain("Unix seconds")
      expect(yield* runCount(server.url)).toBe(1)
    }))

  it.scopedLive("outside the tolerance window (default 5 minutes) is 401; a configured tolerance widens it", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project()), { model })
      const old = yield* deliver(server.url, signed("evt-old", now() - 6 * 60))
      expect(old.status).toBe(401)
      expect(old.text).toMatch(/signed 36\d s ago, outside the 5m tolerance/)
      const ahead = yield* deliver(server.url, signed("evt-ahead", now() + 6 * 60))
      expect(ahead.status).toBe(401)
      expect(ahead.text).toContain("ahead of this server's clock")
      expect((yield* deliver(server.url, signed("evt-recent", now() - 4 * 60))).status).toBe(202)

      const wide = yield* startServer(yield* tempProject(project({ config: `tolerance: "10 minutes"` })), { model })
      expect((yield* deliver(wide.url, signed("evt-old", now() - 6 * 60))).status).toBe(202)
      expect((yield* deliver(wide.url, signed("evt-older", now() - 11 * 60))).status).toBe(401)
    }))

  it.scopedLive("the same signed delivery again is refused as a replay; a retry signed again gets the first delivery's runs", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project()), { model })
      const first = signed("evt-7", now() - 10)
      const delivered = yield* deliver(server.url, first)
      expect(delivered.status).toBe(202)
      const replay = yield* deliver(server.url, first)
      expect(replay.status).toBe(401)
      expect(replay.text).toContain("refused as a replay")
      const retry = yield* deliver(server.url, signed("evt-7"))
      expect(retry.status).toBe(200)
      expect(retry.json).toMatchObject({ duplicate: true, runs: (delivered.json as { runs: unknown }).runs })
      expect(yield* runCount(server.url)).toBe(1)
    }))

  it.scopedLive("the body-only signature is refused unless the config or the playbook allows legacySignatures", () =>
    Effect.gen(function*() {
      const legacy = { "x-foundry-signature": sign(secret, body) }
      const strict = yield* startServer(yield* tempProject(project()), { model })
      const refused = yield* deliver(strict.url, legacy)
      expect(refused.status).toBe(401)
      expect(refused.text).toContain("missing x-foundry-timestamp")
      expect(refused.text).toContain("legacySignatures: true")

      const byConfig = yield* startServer(yield* tempProject(project({ config: "legacySignatures: true" })), { model })
      expect((yield* deliver(byConfig.url, legacy)).status).toBe(202)
      expect((yield* deliver(byConfig.url, { "x-foundry-signature": sign("other", body) })).status).toBe(401)
      // The current form still works there.
      expect((yield* deliver(byConfig.url, signed("evt-1"))).status).toBe(202)

      const byPlaybook = yield* startServer(yield* tempProject(project({ playbook: "legacySignatures: true" })), { model })
      expect((yield* deliver(byPlaybook.url, legacy)).status).toBe(202)
    }))
})

describe("a delivery still processing", () => {
  it.scopedLive("is never run a second time: a repeat gets 409 naming the delivery, and starts nothing", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project()), { model })
      // A first attempt that has claimed the event and not finished (still working, or its process died).
      const db = new Database(server.storeFile)
      db.prepare("INSERT INTO foundry_deliveries (id, webhook, status, received_at) VALUES (?, ?, 'processing', ?)")
        .run("tickets:evt-9", "tickets", Date.now() - 10_000)
      db.close()
      const repeat = yield* deliver(server.url, signed("evt-9"))
      expect(repeat.status).toBe(409)
      expect(repeat.json).toEqual({
        _tag: "DeliveryInProgress",
        deliveryId: "tickets:evt-9",
        message: expect.stringContaining("not run twice")
      })
      expect(repeat.headers.get("retry-after")).toBe("5")
      expect(yield* runCount(server.url)).toBe(0)
    }))

  it.scopedLive("resent as the same signed bytes (a proxy's retry) gets 409, not a replay's 401: the first attempt may yet give its claim up", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project()), { model })
      const headers = signed("evt-10")
      // The first attempt of these very bytes has claimed the event and not finished.
      const db = new Database(server.storeFile)
      db.prepare("INSERT INTO foundry_deliveries (id, webhook, status, received_at, fingerprint) VALUES (?, ?, 'processing', ?, ?)")
        .run("tickets:evt-10", "tickets", Date.now(), headers["x-foundry-signature"])
      db.close()
      const resent = yield* deliver(server.url, headers)
      expect(resent.status).toBe(409)
      expect(resent.json).toMatchObject({ _tag: "DeliveryInProgress", deliveryId: "tickets:evt-10" })
      expect(yield* runCount(server.url)).toBe(0)
    }))
})

describe("a delivery whose process died while it was processing", () => {
  it.scopedLive("is taken over once its claim is stale: the next attempt runs it, once", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project()), { model })
      const db = new Database(server.storeFile)
      db.prepare("INSERT INTO foundry_deliveries (id, webhook, status, received_at) VALUES (?, ?, 'processing', ?)")
        .run("tickets:evt-10", "tickets", Date.now() - staleClaimAfterMs - 1000)
      db.close()
      const retry = yield* deliver(server.url, signed("evt-10"))
      expect(retry.status).toBe(202)
      expect(retry.json).toMatchObject({ deliveryId: "tickets:evt-10", duplicate: false, runs: [{ playbook: "tickets" }] })
      // The sender's next retry, signed anew: the first attempt's runs, nothing started again.
      const again = yield* deliver(server.url, signed("evt-10", now() + 1))
      expect(again.json).toMatchObject({ duplicate: true })
      expect(yield* runCount(server.url)).toBe(1)
    }))
})

describe("a delivery that fails before it starts anything", () => {
  it.scopedLive("gives up its claim, so that the sender's retry is processed (not refused as in progress forever), and is received once", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject({
        ...project(),
        // Fails on its first event only: the playbook's own code breaks once.
        "playbooks/tickets.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import triage from "../agents/triage/agent.js"
let calls = 0
export default definePlaybook({
  on: webhook("tickets", Schema.Struct({ id: Schema.String })),
  agent: triage,
  instance: () => { if (calls++ === 0) throw new Error("first attempt breaks"); return "default" },
  message: (ticket) => "ticket " + ticket.id
})
`
      }), { model })
      const failed = yield* deliver(server.url, signed("evt-3"))
      expect(failed.status).toBe(500)
      expect(failed.text).not.toContain("first attempt breaks")
      const retry = yield* deliver(server.url, signed("evt-3"))
      expect(retry.status).toBe(202)
      expect((retry.json as { runs: ReadonlyArray<unknown> }).runs).toHaveLength(1)
      expect(yield* runCount(server.url)).toBe(1)
      // One delivery, one card on the playbooks page: the retry's decisions join the first attempt's.
      const ofDelivery = (type: string) =>
        Effect.map(http(`${server.url}/api/events?type=${type}&runId=`), (r) =>
          (r.json as { events: ReadonlyArray<{ data: { deliveryId?: string } }> }).events.filter((e) => e.data.deliveryId === "tickets:evt-3"))
      expect(yield* ofDelivery("delivery.received")).toHaveLength(1)
      expect(yield* ofDelivery("playbook.failed")).toHaveLength(1)
      expect(yield* ofDelivery("playbook.dispatched")).toHaveLength(1)
    }))
})
