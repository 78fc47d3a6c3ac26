/**
 * What the inspector's live pages read as events come, in Chromium: a busy run's page and its
 * conversation's page read at most every two seconds, the run's page only the events after those it
 * has, and not on other runs' approvals; the approvals page reads what waits and the newest decided;
 * the overview says when there are more runs than it lists; and the first live stream misses
 * nothing that happened after the page's first read.
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

/** The paths (with their queries) the page asks the API for, from now on. */
const readsOf = (page: Page) => {
  const reads: Array<string> = []
  page.on("request", (request) => {
    const url = new URL(request.url())
    if (url.pathname.startsWith("/api/")) reads.push(url.pathname + url.search)
  })
  return reads
}

describe.skipIf(skipBrowser)("what the inspector's live pages read, in Chromium", () => {
  it.scopedLive("the approvals page reads what waits and the newest decided, not every approval there is", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup
      const decided = runIdOf((yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({ calls: [{ name: "transfer", arguments: { amount: 1 } }] }) } })).json)
      yield* http(`${url}/api/approvals/${yield* pendingApproval(url, decided)}`, { body: { decision: "approve" } })
      yield* waitForRun(url, decided)
      const waiting = runIdOf((yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({ calls: [{ name: "transfer", arguments: { amount: 2 } }] }) } })).json)
      const approval = yield* pendingApproval(url, waiting)
      const reads = readsOf(page)
      yield* promise(() => page.goto(`${url}/approvals`))
      yield* promise(() => page.waitForSelector(`[data-testid=pending] [data-approval='${approval}']`))
      yield* promise(() => page.waitForSelector("[data-testid=decided] .approval"))
      const approvalReads = reads.filter((read) => read.startsWith("/api/approvals?"))
      // What waits, then as many of the newest as show the 50 newest decided; never every approval.
      expect(approvalReads).toContain("/api/approvals?status=pending&limit=1000")
      expect(approvalReads).toContain("/api/approvals?limit=51")
      expect(approvalReads).not.toContain("/api/approvals?")
    }), { timeout: 60_000 })
})
