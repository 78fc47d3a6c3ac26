/**
 * The inspector's lists on a busy project, in Chromium: conversations and runs past the newest
 * page are a "Load more" away, and the playbooks page shows the newest deliveries however many
 * came before them, each with what the playbooks decided, however many decisions internal events
 * brought since.
 */
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { NodeContext } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { Database } from "../../src/durable/Database.js"
import * as SqliteDatabase from "../../src/durable/SqliteDatabase.js"
import { browserPage, skipBrowser } from "../support/browser.js"
import { durableProject, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { http, runIdOf, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** The playbook `urgent`, on the `tickets` webhook: it starts the worker for a ticket of priority 3 or more. */
const urgentPlaybook = `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import worker from "../agents/worker/agent.js"
export default definePlaybook({
  on: webhook("tickets", Schema.Struct({ id: Schema.String, priority: Schema.Number })),
  when: (t) => t.priority >= 3,
  agent: worker,
  message: () => ${JSON.stringify(plan({}))}
})
`

/**
 * `count` playbook decisions about an internal event (a tool's `emit` in run `run_emitter`),
 * written straight into the server's store: as many as a busy project's emits leave.
 */
const seedEmitDecisions = (storeFile: string, count: number) =>
  Effect.scoped(Effect.flatMap(Database, ({ sql }) =>
    sql`INSERT INTO foundry_events (id, time, type, trace_id, span_id, parent_span_id, run_id, conversation_id, instance_id, agent, release, data)
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count})
      SELECT 'evt_emit_' || i, ${Date.now()}, 'playbook.skipped', 'trace_emit', 'span_emit_' || i, NULL, 'run_emitter', 'conv_emitter',
        'default', 'worker', 'dev', '{"event":"ping","playbook":"urgent","reason":"when(event) is false"}' FROM n`
  ).pipe(Effect.provide(SqliteDatabase.layer(storeFile).pipe(Layer.provide(NodeContext.layer)))))

const conversationOf = (created: unknown): string =>
  typeof created === "object" && created !== null && "conversationId" in created ? String(created.conversationId) : ""

describe.skipIf(skipBrowser)("the inspector's long lists in Chromium", () => {
  it.scopedLive("a conversation and a run older than the newest 200 runs are a Load more away", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(durableProject(join(tmpdir(), `foundry-ui-${randomUUID()}.log`)))
      const { url } = yield* startServer(root, { model: plannedModel })
      const mine = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({}) } })
      const myRun = runIdOf(mine.json)
      const myConversation = conversationOf(mine.json)
      yield* waitForRun(url, myRun)
      // Another agent busy since: 210 quick runs, each in a conversation of its own.
      yield* Effect.forEach(Array.from({ length: 210 }, (_, i) => i), () =>
        Effect.flatMap(http(`${url}/api/runs`, { body: { agent: "lead", message: plan({}) } }), (created) => waitForRun(url, runIdOf(created.json))),
        { concurrency: 10, discard: true })
      const page = yield* browserPage

      yield* promise(() => page.goto(`${url}/conversations`))
      yield* promise(() => page.locator("[data-testid=conversations] li").nth(199).waitFor())
      expect(yield* promise(() => page.locator(`[data-conversation="${myConversation}"]`).count())).toBe(0)
      expect(yield* promise(() => page.textContent("[data-testid=conversations-count]"))).toContain("older ones to load")
      yield* promise(() => page.click("[data-testid=load-more]"))
      yield* promise(() => page.locator(`[data-conversation="${myConversation}"]`).waitFor())
      expect(yield* promise(() => page.locator("[data-testid=conversations] li").count())).toBe(211)
      yield* promise(() => page.locator("[data-testid=load-more]").waitFor({ state: "hidden" }))

      yield* promise(() => page.goto(`${url}/runs`))
      yield* promise(() => page.locator("tr[data-run]").nth(199).waitFor())
      expect(yield* promise(() => page.locator(`tr[data-run="${myRun}"]`).count())).toBe(0)
      yield* promise(() => page.click("[data-testid=load-more]"))
      yield* promise(() => page.locator(`tr[data-run="${myRun}"]`).waitFor())
      expect(yield* promise(() => page.locator("tr[data-run]").count())).toBe(211)
      // A run started now comes in on top; the older page loaded stays below.
      const next = runIdOf((yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({}) } })).json)
      yield* promise(() => page.locator(`tr[data-run="${next}"] [data-status=completed]`).waitFor())
      expect(yield* promise(() => page.locator("tr[data-run]").first().getAttribute("data-run"))).toBe(next)
      expect(yield* promise(() => page.locator(`tr[data-run="${myRun}"]`).count())).toBe(1)
    }), { timeout: 180_000 })

  it.scopedLive("the playbooks page shows the newest 50 deliveries after more than 1,000", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        ...durableProject(join(tmpdir(), `foundry-ui-${randomUUID()}.log`)),
        "playbooks/urgent.ts": urgentPlaybook
      })
      const { url } = yield* startServer(root, { model: plannedModel })
      yield* Effect.forEach(Array.from({ length: 1010 }, (_, i) => i + 1), (n) =>
        Effect.flatMap(http(`${url}/hooks/tickets`, { body: { id: `t-${n}`, priority: 1 }, headers: { "x-event-id": `t-${n}` } }), (delivered) =>
          delivered.status === 202 ? Effect.void : Effect.die(new Error(`delivery ${n}: ${delivered.status} ${delivered.text}`))),
        { concurrency: 10, discard: true })
      const page = yield* browserPage
      yield* promise(() => page.goto(`${url}/playbooks`))
      const newest = page.locator("[data-delivery='tickets:t-1010']")
      yield* promise(() => newest.waitFor())
      expect(yield* promise(() => newest.textContent())).toContain("skipped urgent: when(event) is false")
      expect(yield* promise(() => page.locator("[data-delivery]").count())).toBe(50)
    }), { timeout: 180_000 })

  it.scopedLive("the playbooks page shows the newest delivery's decisions after thousands of decisions about internal events", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        ...durableProject(join(tmpdir(), `foundry-ui-${randomUUID()}.log`)),
        "playbooks/urgent.ts": urgentPlaybook
      })
      const server = yield* startServer(root, { model: plannedModel })
      const { url } = server
      const deliver = (id: string) =>
        Effect.flatMap(http(`${url}/hooks/tickets`, { body: { id, priority: 1 }, headers: { "x-event-id": id } }), (delivered) =>
          delivered.status === 202 ? Effect.void : Effect.die(new Error(`delivery ${id}: ${delivered.status} ${delivered.text}`)))
      yield* deliver("t-old")
      // More than the 5,000 of a type the page read forward from the oldest delivery it shows.
      yield* seedEmitDecisions(server.storeFile, 6000)
      yield* deliver("t-new")
      const page = yield* browserPage
      yield* promise(() => page.goto(`${url}/playbooks`))
      const newest = page.locator("[data-delivery='tickets:t-new']")
      yield* promise(() => newest.waitFor())
      yield* promise(() => newest.locator("li").first().waitFor({ timeout: 10_000 }))
      expect(yield* promise(() => newest.locator("li").allTextContents())).toEqual(["skipped urgent: when(event) is false"])
      const oldest = page.locator("[data-delivery='tickets:t-old'] li")
      expect(yield* promise(() => oldest.allTextContents())).toEqual(["skipped urgent: when(event) is false"])
    }), { timeout: 120_000 })
})
