/**
 * A run's page in Chromium: what a tool's input says is shown as stored (no bidi control reorders
 * it).
 */
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { browserPage, skipBrowser } from "../support/browser.js"
import { durableProject, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { http, pendingApproval, runIdOf, startServer } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const setup = Effect.gen(function*() {
  const root = yield* tempProject(durableProject(join(tmpdir(), `foundry-ui-${randomUUID()}.log`)))
  const server = yield* startServer(root, { model: plannedModel })
  return { url: server.url, page: yield* browserPage }
})

describe.skipIf(skipBrowser)("a run's page in Chromium", () => {
  it.scopedLive("a bidi override in a tool's input shows escaped on the approval card and in the timeline", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup
      // Shown raw, "\u202E0001 USD" reads as "DSU 1000".
      const note = "approve payment of \u202E0001 USD"
      const created = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({ calls: [{ name: "transfer", arguments: { amount: 1, note } }] }) } })
      const runId = runIdOf(created.json)
      yield* pendingApproval(url, runId)
      yield* promise(() => page.goto(`${url}/approvals`))
      const card = page.locator("[data-testid=pending] .approval pre").first()
      yield* promise(() => card.waitFor())
      const shown = (yield* promise(() => card.textContent())) ?? ""
      expect(shown).not.toMatch(/[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/)
      expect(shown).toContain("approve payment of \\u202e0001 USD")
      // Still JSON that reads back as the input.
      expect(JSON.parse(shown)).toEqual({ amount: 1, note })

      yield* promise(() => page.goto(`${url}/runs/${runId}`))
      yield* promise(() => page.waitForSelector("[data-testid=waterfall] .span.approval"))
      yield* promise(() => page.locator("[data-testid=waterfall] .span.approval .span-row").click())
      const input = page.locator("[data-testid=waterfall] .span.approval [data-testid=span-input]")
      yield* promise(() => input.waitFor())
      expect(yield* promise(() => input.textContent())).toContain("\\u202e0001 USD")
      expect(yield* promise(() => page.textContent("main"))).not.toMatch(/[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/)
    }))
})
