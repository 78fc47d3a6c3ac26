/**
 * Done schedules in the inspector, in Chromium: a one-shot `at` whose time is over offers only
 * what the API still does for it (a firing by hand, not pause or resume), and an agent's done
 * timer says why on its instance's page, as the API gives the reason.
 */
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { browserPage, skipBrowser } from "../support/browser.js"
import { durableProject, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { http, runIdOf, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

interface ScheduleBody {
  readonly id: string
  readonly status: string
  readonly reason: string | null
  readonly lastRunId: string | null
}

const isSchedule = (body: unknown): body is ScheduleBody =>
  typeof body === "object" && body !== null && "id" in body && typeof body.id === "string" && "status" in body && typeof body.status === "string"

const schedulesOf = (body: unknown): ReadonlyArray<ScheduleBody> => Array.isArray(body) ? body.filter(isSchedule) : []

describe.skipIf(skipBrowser)("done schedules in the inspector, in Chromium", () => {
  it.scopedLive("a done schedule offers Run now only, and an agent's done timer says why on its instance's page", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        ...durableProject(join(tmpdir(), `foundry-ui-${randomUUID()}.log`), "", { timers: true }),
        "schedules/bygone.ts": `import { defineSchedule } from "foundry"
import worker from "../agents/worker/agent.js"
export default defineSchedule({ agent: worker, at: "2020-01-01T00:00:00Z", message: ${JSON.stringify(plan({}))} })
`
      })
      const { url } = yield* startServer(root, { model: plannedModel })
      // What the API does for a done schedule: pause and resume are refused (409), so they are no action for it.
      for (const action of ["pause", "resume"]) {
        const answered = yield* http(`${url}/api/schedules/bygone/${action}`, { method: "POST" })
        expect(answered.status).toBe(409)
        expect(answered.text).toContain("ScheduleDone")
      }
      // An agent arms a timer a second ahead; once it fired, it is done.
      const arming = runIdOf((yield* http(`${url}/api/runs`, {
        body: { agent: "worker", message: plan({ calls: [{ name: "foundry_schedule", arguments: { in: "1 second", message: plan({}) } }] }) }
      })).json)
      yield* waitForRun(url, arming)
      const timer = yield* http(`${url}/api/schedules`).pipe(
        Effect.map((listed) => schedulesOf(listed.json).find((s) => s.id.startsWith("agent:") && s.status === "done")),
        Effect.filterOrFail((found): found is ScheduleBody => found !== undefined, () => "the agent's timer is not done yet"),
        Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 200 })
      )
      expect(timer.reason).toMatch(/has come/)

      const page = yield* browserPage
      yield* promise(() => page.goto(`${url}/schedules`))
      const bygone = page.locator(`tr[data-schedule="bygone"]`)
      yield* promise(() => bygone.waitFor())
      expect(yield* promise(() => bygone.locator("button").allTextContents())).toEqual(["Run now"])
      expect(yield* promise(() => page.locator(`tr[data-schedule="${timer.id}"] button`).allTextContents())).toEqual(["Run now"])
      // Run now still fires it: the API starts a run for a done schedule, and the row links to it.
      yield* promise(() => bygone.locator("button >> text=Run now").click())
      yield* promise(() => bygone.locator("a[href^='/runs/']").waitFor())
      expect(yield* promise(() => page.textContent("[data-testid=schedules-problem]"))).toBe("")

      // The instance's page lists its agent's timers, and says why the done one fires no more.
      yield* promise(() => page.goto(`${url}/instances/worker/default`))
      const listed = page.locator(`[data-testid=instance-schedules] [data-schedule="${timer.id}"]`)
      yield* promise(() => listed.waitFor())
      expect(yield* promise(() => listed.textContent())).toContain(`done: ${timer.reason}`)
      // Run now fired bygone above: its reason says so rather than that it never fired.
      expect(yield* promise(() => page.textContent(`[data-testid=instance-schedules] [data-schedule="bygone"]`))).toMatch(/done: .*has passed; Run now started its last run/)
    }))
})
