/**
 * Releases in the inspector (Chromium): after two deploys with `foundry deploy`, the releases page
 * lists both, newest first, with the current one marked, the runs each started and what each
 * changed; a run's page says which release it ran on.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { browserPage, skipBrowser } from "../support/browser.js"
import { freePort, runCli, startCli } from "../support/cli.js"
import { http, runIdOf, waitForRun } from "../support/server.js"
import { tempProject, writeFiles } from "../support/tempProject.js"

const agent = `import { defineAgent } from "foundry"
import answer from "./tools/answer.tool.js"
export default defineAgent({ description: "Answers", model: "demo", tools: [answer] })
`

const tool = (answer: string) => `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
export default defineTool({
  description: "Returns the current answer",
  input: Schema.Struct({}),
  output: Schema.String,
  run: () => Effect.succeed(${JSON.stringify(answer)})
})
`

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** `foundry deploy <root>`, expected to switch: the release id it printed. */
const deploy = (root: string) =>
  Effect.gen(function*() {
    const result = yield* runCli(["deploy", root])
    const id = /deploying (rel_[0-9a-f]{12})/.exec(result.stdout)?.[1]
    if (result.code !== 0 || id === undefined) throw new Error(`foundry deploy failed:\n${result.stdout}${result.stderr}`)
    return id
  })

describe.skipIf(skipBrowser)("releases in the inspector", () => {
  it.scopedLive("the releases page lists each deploy (current marked, runs, changes) and a run's page names its release", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const root = yield* tempProject({
        "agents/desk/agent.ts": agent,
        "agents/desk/tools/answer.tool.ts": tool("v1"),
        "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ server: { port: ${port} } })\n`
      })
      const server = yield* startCli(["start", root])
      yield* server.waitFor(/listening on/)
      const url = `http://127.0.0.1:${port}`

      const v1 = yield* deploy(root)
      const started = yield* http(`${url}/api/runs`, { body: { agent: "desk", message: "hello" } })
      const runId = runIdOf(started.json)
      expect((yield* waitForRun(url, runId)).status).toBe("completed")
      writeFiles(root, { "agents/desk/tools/answer.tool.ts": tool("v2") })
      const v2 = yield* deploy(root)

      const page = yield* browserPage
      yield* promise(() => page.goto(`${url}/`))
      yield* promise(() => page.click("header nav a[href='/releases']"))
      yield* promise(() => page.waitForSelector(`tr[data-release=${v1}]`))
      const rows = yield* promise(() => page.$$eval("[data-testid=releases] tbody tr", (trs) => trs.map((tr) => tr.getAttribute("data-release"))))
      expect(rows).toEqual([v2, v1])
      expect(yield* promise(() => page.locator(`tr[data-release=${v2}] [data-testid=current]`).count())).toBe(1)
      expect(yield* promise(() => page.locator(`tr[data-release=${v1}] [data-testid=current]`).count())).toBe(0)
      expect(yield* promise(() => page.textContent(`tr[data-release=${v1}] [data-testid=runs]`))).toBe("1")
      expect(yield* promise(() => page.textContent(`tr[data-release=${v2}] [data-testid=runs]`))).toBe("0")
      expect(yield* promise(() => page.textContent(`tr[data-release=${v2}]`))).toContain("agents ~1, tools ~1")
      expect(yield* promise(() => page.getAttribute(`tr[data-release=${v2}] td:last-child`, "title"))).toBe("~ agent desk\n~ tool desk/answer")
      // The history: each deploy, from the release current before it.
      const history = yield* promise(() => page.$$eval("[data-testid=deployments] tbody tr", (trs) =>
        trs.map((tr) => [...tr.querySelectorAll("td")].slice(1, 4).map((td) => td.textContent))))
      expect(history).toEqual([["deploy", v2, v1], ["deploy", v1, "—"]])

      // A run started after the second deploy shows on the page without a reload.
      const later = yield* http(`${url}/api/runs`, { body: { agent: "desk", message: "hello again" } })
      expect(later.status).toBe(202)
      yield* promise(() => page.textContent(`tr[data-release=${v2}] [data-testid=runs]`)).pipe(
        Effect.filterOrFail((text) => text === "1", (text) => `runs of ${v2}: ${text}`),
        Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 200 })
      )

      yield* promise(() => page.goto(`${url}/runs/${runId}`))
      yield* promise(() => page.waitForSelector("[data-testid=run-release]"))
      expect(yield* promise(() => page.textContent("[data-testid=run-release]"))).toContain(v1)
      yield* promise(() => page.click("[data-testid=run-release] a"))
      yield* promise(() => page.waitForURL(`${url}/releases`))
    }))
})
