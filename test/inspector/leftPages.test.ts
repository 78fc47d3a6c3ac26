/**
 * A page left while it draws, in Chromium: what its draw read on the way comes too late to show,
 * and the page opened since stays. Its first draw and a redraw its events brought are both held
 * in flight (the browser keeps the API's answer back) while the reader follows a link.
 */
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { browserPage, skipBrowser } from "../support/browser.js"
import { durableProject, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { http, pendingApproval, runIdOf, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const setup = Effect.gen(function*() {
  const root = yield* tempProject(durableProject(join(tmpdir(), `foundry-ui-${randomUUID()}.log`)))
  const server = yield* startServer(root, { model: plannedModel })
  return { url: server.url, page: yield* browserPage }
})

/**
 * Holds the browser's reads of `path` from now on: `asked` once one is on its way, `release` lets
 * them through.
 */
const hold = (page: Page, path: string) =>
  Effect.promise(async () => {
    let release = () => {}
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    let wasAsked = () => {}
    const asked = new Promise<void>((resolve) => {
      wasAsked = resolve
    })
    await page.route((address) => address.pathname === path, async (route) => {
      wasAsked()
      await released
      await route.continue().catch(() => undefined)
    })
    return { asked, release }
  })

/** The headings the page shows now. */
const headings = (page: Page) => promise(() => page.locator("main h1").allTextContents())

describe.skipIf(skipBrowser)("a page left while it draws, in Chromium", () => {
  it.scopedLive("a run's page left during its first draw does not replace the page opened since", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup
      const runId = runIdOf((yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({}) } })).json)
      yield* waitForRun(url, runId)
      const held = yield* hold(page, `/api/runs/${runId}`)
      yield* promise(() => page.goto(`${url}/runs/${runId}`))
      yield* promise(() => held.asked)
      yield* promise(() => page.click("header nav a[href='/agents']"))
      yield* promise(() => page.waitForSelector("main td >> text=worker"))
      held.release()
      // The run page's draw goes on with what it read: the rest of its reads are not held.
      yield* promise(() => page.waitForResponse((response) => response.url().includes(`/api/runs/${runId}/artifacts`)))
      yield* Effect.sleep("500 millis")
      expect(yield* headings(page)).toEqual(["Agents"])
      expect(yield* promise(() => page.locator("[data-testid=waterfall]").count())).toBe(0)
    }), { timeout: 60_000 })

  it.scopedLive("a busy run's page left during a redraw does not replace the agent's page opened from it", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup
      const runId = runIdOf((yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({ calls: [{ name: "transfer", arguments: { amount: 1 } }] }) } })).json)
      const approval = yield* pendingApproval(url, runId)
      yield* promise(() => page.goto(`${url}/runs/${runId}`))
      yield* promise(() => page.waitForSelector("h1 + p [data-status=suspended]"))
      yield* promise(() => page.waitForSelector("#live.on"))
      // The approval's decision and what the run does next redraw the page: that read is held.
      const held = yield* hold(page, `/api/runs/${runId}`)
      yield* http(`${url}/api/approvals/${approval}`, { body: { decision: "approve" } })
      yield* promise(() => held.asked)
      yield* promise(() => page.click("h1 + p a[href='/agents/worker']"))
      yield* promise(() => page.waitForSelector("[data-testid=agent-activity] [data-testid=agent-runs] li"))
      held.release()
      yield* promise(() => page.waitForResponse((response) => response.url().includes(`/api/runs/${runId}/artifacts`)))
      yield* waitForRun(url, runId)
      // Past the gathering of the run's last events: the agent's page has drawn what they changed.
      yield* Effect.sleep("1 second")
      expect(yield* headings(page)).toEqual(["worker"])
      expect(yield* promise(() => page.locator("[data-testid=waterfall]").count())).toBe(0)
      expect(yield* promise(() => page.locator("[data-testid=agent-activity]").count())).toBe(1)
    }), { timeout: 60_000 })
})
