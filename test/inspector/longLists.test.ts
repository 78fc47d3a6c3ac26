/**
 * The inspector's lists on a busy project, in Chromium: conversations and runs past the newest
 * page are a "Load more" away, and the playbooks page shows the newest deliveries however many
 * came before them.
 */
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { browserPage, skipBrowser } from "../support/browser.js"
import { durableProject, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { http, runIdOf, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

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
        "playbooks/urgent.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import worker from "../agents/worker/agent.js"
export default definePlaybook({
  on: webhook("tickets", Schema.Struct({ id: Schema.String, priority: Schema.Number })),
  when: (t) => t.priority >= 3,
  agent: worker,
  message: () => ${JSON.stringify(plan({}))}
})
`
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
})
