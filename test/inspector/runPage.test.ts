/**
 * A run's page in Chromium: what a tool's input says is shown as stored (no bidi control reorders
 * it), its timeline is used with the keyboard, and what the reader opened stays open as it updates.
 */
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { browserPage, skipBrowser } from "../support/browser.js"
import { durableProject, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { http, pendingApproval, runIdOf, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const setup = Effect.gen(function*() {
  const root = yield* tempProject(durableProject(join(tmpdir(), `foundry-ui-${randomUUID()}.log`), "", { timers: true }))
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

  it.scopedLive("an approval its run's cancel closed says so in the timeline, as on its card and in the API", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup
      const created = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({ calls: [{ name: "transfer", arguments: { amount: 3 } }] }) } })
      const runId = runIdOf(created.json)
      const approvalId = yield* pendingApproval(url, runId)
      expect((yield* http(`${url}/api/runs/${runId}/cancel`, { method: "POST" })).json).toMatchObject({ status: "cancelled" })
      const closed = { status: "expired", reason: "the run was cancelled before a decision" }
      const listed = (yield* http(`${url}/api/approvals?run=${runId}`)).json as ReadonlyArray<{ id: string }>
      expect(listed.find((a) => a.id === approvalId)).toMatchObject(closed)
      const events = (yield* http(`${url}/api/runs/${runId}/events`)).json as ReadonlyArray<{ type: string; data: unknown }>
      expect(events.find((e) => e.type === "approval.decided")?.data).toMatchObject(closed)
      // A late decision is told why the approval is closed.
      const late = yield* http(`${url}/api/approvals/${approvalId}`, { body: { decision: "approve" } })
      expect(late.status).toBe(409)
      expect(late.json).toMatchObject({
        _tag: "ApprovalAlreadyDecided",
        message: `approval "${approvalId}" is already expired (the run was cancelled before a decision); a decision applies once`
      })

      yield* promise(() => page.goto(`${url}/approvals`))
      const card = page.locator(`[data-approval=${approvalId}] [data-testid=approval-decision]`)
      yield* promise(() => card.waitFor())
      expect(yield* promise(() => card.textContent())).toContain("expired at")
      expect(yield* promise(() => card.textContent())).toContain("· the run was cancelled before a decision")

      yield* promise(() => page.goto(`${url}/runs/${runId}`))
      yield* promise(() => page.locator("[data-testid=waterfall] .span.approval .span-row").click())
      const decision = page.locator("[data-testid=waterfall] .span.approval [data-testid=span-decision]")
      yield* promise(() => decision.waitFor())
      expect(yield* promise(() => decision.textContent())).toBe("expired · the run was cancelled before a decision")
    }))

  it.scopedLive("a model turn the run's cancel cut short ends with the run in the timeline, saying so", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup
      const created = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({ delay: 30_000, calls: [] }) } })
      const runId = runIdOf(created.json)
      for (let i = 0; i < 200; i++) {
        const types = ((yield* http(`${url}/api/runs/${runId}/events`)).json as Array<{ type: string }>).map((e) => e.type)
        if (types.includes("model.turn.started")) break
        yield* Effect.sleep("25 millis")
      }
      expect((yield* http(`${url}/api/runs/${runId}/cancel`, { method: "POST" })).status).toBe(200)
      yield* promise(() => page.goto(`${url}/runs/${runId}`))
      const turn = page.locator("[data-testid=waterfall] .span.model")
      yield* promise(() => turn.waitFor())
      expect(yield* promise(() => turn.getAttribute("class"))).toContain("failed")
      // A duration, as every ended span has (an open one shows none).
      expect(yield* promise(() => turn.locator(".span-meta").textContent())).toMatch(/\d/)
      yield* promise(() => turn.locator(".span-row").click())
      expect(yield* promise(() => turn.locator(".error-line").textContent())).toBe("cut short: the run was cancelled before the model answered")
    }))

  it.scopedLive("a run still going is drawn up to now: a call that takes a while grows, with how long it has taken so far", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup
      const created = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({ calls: [{ name: "slow", arguments: { ms: 6000 } }] }) } })
      const runId = runIdOf(created.json)
      for (let i = 0; i < 200; i++) {
        const types = ((yield* http(`${url}/api/runs/${runId}/events`)).json as Array<{ type: string }>).map((e) => e.type)
        if (types.includes("tool.call.started")) break
        yield* Effect.sleep("25 millis")
      }
      yield* promise(() => page.goto(`${url}/runs/${runId}`))
      const tool = page.locator("[data-testid=waterfall] .span.tool")
      yield* promise(() => tool.waitFor())
      yield* Effect.sleep("1200 millis")
      const seen = Effect.promise(async () => ({
        toolLeft: parseFloat(await tool.locator(".bar").evaluate((bar) => bar.style.left)),
        turnLeft: parseFloat(await page.locator("[data-testid=waterfall] .span.model .bar").first().evaluate((bar) => bar.style.left)),
        took: (await tool.locator("[data-testid=span-took]").textContent()) ?? ""
      }))
      const first = yield* seen
      yield* Effect.sleep("1500 millis")
      const later = yield* seen
      // The turn and the call began near the run's start, not at the right edge of a timeline that ended at the last event.
      expect(first.turnLeft).toBeLessThan(50)
      expect(first.toolLeft).toBeLessThan(50)
      expect(first.took).toMatch(/^[\d.]+ s so far$/)
      // At least a second more (times shown in tenths: 2.3 - 1.3 is 0.9999999999999998 in floating point).
      expect(Math.round((parseFloat(later.took) - parseFloat(first.took)) * 10)).toBeGreaterThanOrEqual(10)
    }))

  it.scopedLive("timeline rows open and close from the keyboard and say whether they are open", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup
      const created = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({ calls: [{ name: "record", arguments: { line: "keys" } }] }) } })
      const runId = runIdOf(created.json)
      yield* waitForRun(url, runId)
      yield* promise(() => page.goto(`${url}/runs/${runId}`))
      const row = page.locator("[data-testid=waterfall] .span.tool .span-row").first()
      yield* promise(() => row.waitFor())
      expect(yield* promise(() => row.getAttribute("aria-expanded"))).toBe("true")
      // Reached with Tab like any control, from the timeline's first row.
      yield* promise(() => page.locator("[data-testid=waterfall] .span-row").first().focus())
      const focused = promise(() => page.evaluate<string | null>("document.activeElement.closest('.span-row') && document.activeElement.closest('[data-span]').dataset.kind"))
      for (let i = 0; i < 10 && (yield* focused) !== "tool"; i++) yield* promise(() => page.keyboard.press("Tab"))
      expect(yield* focused).toBe("tool")
      yield* promise(() => page.keyboard.press("Enter"))
      yield* promise(() => page.locator("[data-testid=waterfall] .span.tool [data-testid=span-input]").waitFor({ state: "detached" }))
      expect(yield* promise(() => row.getAttribute("aria-expanded"))).toBe("false")
      // The redrawn row keeps the focus: Space opens it again.
      yield* promise(() => page.keyboard.press(" "))
      yield* promise(() => page.locator("[data-testid=waterfall] .span.tool [data-testid=span-input]").waitFor())
      expect(yield* promise(() => row.getAttribute("aria-expanded"))).toBe("true")
    }))

  it.scopedLive("a timer tool's row says which timer it armed, linked to the schedules, and when it fires", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup
      const created = yield* http(`${url}/api/runs`, {
        body: { agent: "worker", message: plan({ calls: [{ name: "foundry_sleep", arguments: { for: "30 minutes", message: "wake" } }] }) }
      })
      const runId = runIdOf(created.json)
      yield* waitForRun(url, runId)
      const events = (yield* http(`${url}/api/runs/${runId}/events`)).json as ReadonlyArray<{ type: string; data: { timerId?: string; firesAt?: string } }>
      const armed = events.find((e) => e.type === "timer.armed")?.data
      expect(armed?.timerId).toMatch(/^agent:tmr_/)
      yield* promise(() => page.goto(`${url}/runs/${runId}`))
      const timer = page.locator("[data-testid=waterfall] .span.tool [data-testid=span-timer]")
      yield* promise(() => timer.waitFor())
      expect(yield* promise(() => timer.textContent())).toContain(`armed timer ${armed?.timerId}, fires `)
      expect(yield* promise(() => timer.locator("a").getAttribute("href"))).toBe("/schedules")
      expect(yield* promise(() => timer.locator("time").getAttribute("datetime"))).toBe(armed?.firesAt)
    }))

  it.scopedLive("the raw events stay open while the run's events redraw the page", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup
      const created = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({ calls: [{ name: "transfer", arguments: { amount: 5 } }] }) } })
      const runId = runIdOf(created.json)
      const approval = yield* pendingApproval(url, runId)
      yield* promise(() => page.goto(`${url}/runs/${runId}`))
      yield* promise(() => page.waitForSelector("#live.on"))
      yield* promise(() => page.click("details summary:has-text('Raw events')"))
      // Decided elsewhere: the run goes on, and its events redraw the page.
      yield* http(`${url}/api/approvals/${approval}`, { body: { decision: "approve" } })
      yield* waitForRun(url, runId)
      yield* promise(() => page.waitForSelector("h1 + p [data-status=completed]"))
      yield* promise(() => page.waitForSelector("details pre.raw:has-text('run.completed')", { state: "attached" }))
      expect(yield* promise(() => page.locator("details:has(summary:has-text('Raw events'))").getAttribute("open"))).toBe("")
    }))
})
