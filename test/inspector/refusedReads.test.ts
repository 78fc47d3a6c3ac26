/**
 * The inspector's live pages when the server refuses their reads (429, as over a token's rate
 * limit), in Chromium: each page says why on its error line, and draws again by itself once the
 * server answers, with what happened meanwhile.
 */
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Page, Route } from "playwright-core"
import { browserPage, skipBrowser } from "../support/browser.js"
import { durableProject, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { http, pendingApproval, runIdOf, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** The API's reads; the live event stream is not one of them, so events still arrive. */
const isRead = (url: URL): boolean => url.pathname.startsWith("/api/") && url.pathname !== "/api/events"

const refuse = (route: Route) =>
  route.fulfill({
    status: 429,
    headers: { "retry-after": "1" },
    contentType: "application/json",
    body: JSON.stringify({ message: "too many requests: 6 per 3 seconds" })
  })

/** From now on the browser's reads get 429, until `answer`. */
const refuseReads = (page: Page) => promise(() => page.route(isRead, refuse))
const answerReads = (page: Page) => promise(() => page.unroute(isRead, refuse))

/** The page says its reads were refused and when it tries again; once the server answers, the line goes. */
const refusedThenRead = (page: Page) =>
  Effect.gen(function*() {
    yield* promise(() => page.waitForSelector("[data-testid=page-problem] >> text=/too many requests: 6 per 3 seconds \\(trying again in \\d+ s\\)/"))
    yield* answerReads(page)
    yield* promise(() => page.waitForSelector("[data-testid=page-problem]:empty", { state: "attached" }))
  })

const openLive = (page: Page, url: string) =>
  Effect.gen(function*() {
    yield* promise(() => page.goto(url))
    yield* promise(() => page.waitForSelector("#live.on"))
  })

describe.skipIf(skipBrowser)("the inspector's live pages when the server refuses reads, in Chromium", () => {
  it.scopedLive("agents, an agent, approvals, instances and an instance say so, and draw again once the server answers", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(durableProject(join(tmpdir(), `foundry-ui-${randomUUID()}.log`)))
      const { url } = yield* startServer(root, { model: plannedModel })
      expect((yield* http(`${url}/api/instances`, { body: { agent: "worker", id: "acme" } })).status).toBe(201)
      const first = runIdOf((yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({}) } })).json)
      yield* waitForRun(url, first)
      const page = yield* browserPage
      const errors: Array<string> = []
      page.on("pageerror", (error) => errors.push(error.message))

      // The agents list, refused from its first read.
      yield* refuseReads(page)
      yield* promise(() => page.goto(`${url}/agents`))
      yield* refusedThenRead(page)
      yield* promise(() => page.waitForSelector("a[href='/agents/worker']"))

      // An agent's page: a run starts while its reads are refused; it shows once they are not.
      yield* openLive(page, `${url}/agents/worker`)
      yield* promise(() => page.waitForSelector(`[data-testid=agent-runs] a[href='/runs/${first}']`))
      yield* refuseReads(page)
      const second = runIdOf((yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({}) } })).json)
      yield* waitForRun(url, second)
      yield* refusedThenRead(page)
      yield* promise(() => page.waitForSelector(`[data-testid=agent-runs] a[href='/runs/${second}']`))

      // Approvals: one is asked for while the page's reads are refused.
      yield* openLive(page, `${url}/approvals`)
      yield* promise(() => page.waitForSelector("[data-testid=pending] >> text=Nothing waits on you."))
      yield* refuseReads(page)
      const waiting = runIdOf((yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({ calls: [{ name: "transfer", arguments: { amount: 5 } }] }) } })).json)
      const approval = yield* pendingApproval(url, waiting)
      yield* refusedThenRead(page)
      yield* promise(() => page.waitForSelector(`[data-testid=pending] [data-approval='${approval}']`))

      // Instances: a listed instance is paused while the reads are refused; its row says so after.
      yield* openLive(page, `${url}/instances`)
      yield* promise(() => page.waitForSelector("tr[data-instance=acme] [data-status=active]"))
      yield* refuseReads(page)
      expect((yield* http(`${url}/api/instances/acme?agent=worker`, { method: "PATCH", body: { paused: true, reason: "audit" } })).status).toBe(200)
      yield* refusedThenRead(page)
      yield* promise(() => page.waitForSelector("tr[data-instance=acme] [data-status=paused]"))

      // An instance's page: resumed while its reads are refused.
      yield* openLive(page, `${url}/instances/worker/acme`)
      yield* promise(() => page.waitForSelector("[data-testid=instance-status] [data-status=paused]"))
      yield* refuseReads(page)
      expect((yield* http(`${url}/api/instances/acme?agent=worker`, { method: "PATCH", body: { paused: false } })).status).toBe(200)
      yield* refusedThenRead(page)
      yield* promise(() => page.waitForSelector("[data-testid=instance-status] [data-status=active]"))

      expect(errors).toEqual([])
    }), { timeout: 60_000 })
})
