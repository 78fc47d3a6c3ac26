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
import { Deferred, Effect } from "effect"
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

/** A run that takes turns for a few seconds: a slow call in each of its 20 turns, 4 events a turn. */
const busy = plan({ repeat: true, calls: [{ name: "slow", arguments: { ms: 150 } }] })

describe.skipIf(skipBrowser)("what the inspector's live pages read, in Chromium", () => {
  it.scopedLive("a busy run's page reads at most every two seconds, and only the run's events after those it has", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup
      const runId = runIdOf((yield* http(`${url}/api/runs`, { body: { agent: "worker", message: busy } })).json)
      const reads = readsOf(page)
      yield* promise(() => page.goto(`${url}/runs/${runId}`))
      const started = Date.now()
      const run = yield* waitForRun(url, runId)
      const took = Date.now() - started
      // It ends without an answer, so its error comes between the title and its status.
      yield* promise(() => page.waitForSelector(`h1 ~ p [data-status=${run.status}]`))
      const events = (yield* http(`${url}/api/runs/${runId}/events`)).json as ReadonlyArray<unknown>
      // Every one of its events, each once.
      yield* promise(() => page.waitForSelector(`details summary:has-text('Raw events (${events.length})')`))
      const draws = reads.filter((read) => read === `/api/runs/${runId}`).length
      // The first draw, one every two seconds while the run went, and the one its end brought.
      expect(draws).toBeLessThanOrEqual(Math.ceil(took / 2000) + 2)
      // Its whole history once; after that only what came after the last event it had.
      expect(reads.filter((read) => read === `/api/runs/${runId}/events`)).toHaveLength(1)
      const after = reads.filter((read) => read.startsWith("/api/events?") && read.includes(`runId=${runId}`))
      expect(after.length).toBe(draws - 1)
      expect(after.every((read) => /[?&]after=[1-9]\d*/.test(read))).toBe(true)
    }), { timeout: 60_000 })

  it.scopedLive("a run's page is not drawn again for another run's approval", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup
      const done = runIdOf((yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({}) } })).json)
      yield* waitForRun(url, done)
      yield* promise(() => page.goto(`${url}/runs/${done}`))
      yield* promise(() => page.waitForSelector("h1 + p [data-status=completed]"))
      yield* promise(() => page.waitForSelector("#live.on"))
      const reads = readsOf(page)
      const other = runIdOf((yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({ calls: [{ name: "transfer", arguments: { amount: 5 } }] }) } })).json)
      const approval = yield* pendingApproval(url, other)
      yield* http(`${url}/api/approvals/${approval}`, { body: { decision: "deny" } })
      yield* waitForRun(url, other)
      // Past the gathering of a burst of events: a draw would have asked for the run by now.
      yield* Effect.sleep("3 seconds")
      expect(reads.filter((read) => read.startsWith(`/api/runs/${done}`))).toEqual([])
    }), { timeout: 60_000 })

  it.scopedLive("a busy run's conversation page reads at most every two seconds", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup
      const created = (yield* http(`${url}/api/runs`, { body: { agent: "worker", message: busy } })).json as { runId: string; conversationId: string }
      const reads = readsOf(page)
      yield* promise(() => page.goto(`${url}/conversations/${created.conversationId}`))
      const started = Date.now()
      yield* promise(() => page.waitForSelector("[data-testid=stop]:not(.hidden)"))
      yield* waitForRun(url, created.runId)
      const took = Date.now() - started
      // Its end shows: nothing to stop.
      yield* promise(() => page.waitForSelector("[data-testid=stop].hidden", { state: "attached" }))
      const draws = reads.filter((read) => read === `/api/conversations/${created.conversationId}/messages`).length
      // The first draw, the one the stream's opening brings, one every two seconds while the run went, and the one its end brought.
      expect(draws).toBeLessThanOrEqual(Math.ceil(took / 2000) + 3)
    }), { timeout: 60_000 })

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

  it.scopedLive("the overview says 20+ when more runs wait than it lists", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup
      const runs = yield* Effect.forEach(Array.from({ length: 21 }, (_, index) => index), (index) =>
        Effect.map(
          http(`${url}/api/runs`, { body: { agent: "worker", message: plan({ calls: [{ name: "transfer", arguments: { amount: index } }] }) } }),
          (created) => runIdOf(created.json)
        ), { concurrency: 7 })
      yield* Effect.forEach(runs, (runId) => pendingApproval(url, runId), { concurrency: 7, discard: true })
      yield* promise(() => page.goto(url))
      const heading = page.locator("h2:has-text('In progress')")
      yield* promise(() => heading.waitFor())
      expect(yield* promise(() => heading.textContent())).toBe("In progress (0 running, 20+ waiting)")
      expect(yield* promise(() => page.locator("h2:has-text('Waiting on you')").textContent())).toBe("Waiting on you (21)")
    }), { timeout: 60_000 })

  it.scopedLive("a run that ends between a page's first read and the opening of the live stream shows as ended", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup
      const runId = runIdOf((yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({ calls: [{ name: "slow", arguments: { ms: 1500 } }] }) } })).json)
      // The live stream is held back until the run has ended: the page reads it running, and nothing after.
      const held = yield* Deferred.make<void>()
      const release = Effect.runPromise(Deferred.await(held))
      yield* promise(() =>
        page.route((address) => address.pathname === "/api/events", async (route) => {
          if ((route.request().headers()["accept"] ?? "").includes("text/event-stream")) await release
          await route.continue()
        }))
      yield* promise(() => page.goto(`${url}/runs/${runId}`))
      yield* promise(() => page.waitForSelector("h1 + p [data-status=running]"))
      yield* waitForRun(url, runId)
      yield* Deferred.succeed(held, undefined)
      yield* promise(() => page.waitForSelector("#live.on"))
      yield* promise(() => page.waitForSelector("h1 + p [data-status=completed]", { timeout: 10_000 }))
    }), { timeout: 60_000 })
})
