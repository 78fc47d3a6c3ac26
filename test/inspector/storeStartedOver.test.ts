/**
 * The inspector left open while the store behind its server starts over (a fresh dev database,
 * another project's server on the same port): its stream resumes after event numbers the new
 * store has not reached, so it would wait, stale and silent, until the new store passed them.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, ExecutionStrategy, Exit, Scope } from "effect"
import { browserPage, skipBrowser } from "../support/browser.js"
import { freePort, startCli } from "../support/cli.js"
import { http, runIdOf, waitForRun } from "../support/server.js"
import { answeringAgentFile, answerToolFile, tempProject } from "../support/tempProject.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const project = tempProject({ "agents/helper/agent.ts": answeringAgentFile, "agents/helper/tools/answer.tool.ts": answerToolFile(`"sound"`) })

describe.skipIf(skipBrowser)("the inspector when the store starts over", () => {
  it.scopedLive("a page left open while another project's server takes the port loads again, and shows that store's runs live", () =>
    Effect.gen(function*() {
      const [first, second] = [yield* project, yield* project]
      const port = yield* freePort
      const url = `http://127.0.0.1:${port}`
      const test = yield* Effect.scope
      /** `foundry start` on the port, in a scope of its own (closed with the test's if not before): closing it stops the server. */
      const serve = (root: string) =>
        Effect.gen(function*() {
          const scope = yield* Scope.fork(test, ExecutionStrategy.sequential)
          const server = yield* startCli(["start", root, "--port", String(port)]).pipe(Scope.extend(scope))
          yield* server.waitFor(/listening on/)
          return scope
        })
      const run = (message: string) =>
        Effect.gen(function*() {
          const runId = runIdOf((yield* http(`${url}/api/runs`, { body: { agent: "helper", message } })).json)
          yield* waitForRun(url, runId)
          return runId
        })

      const before = yield* serve(first)
      const page = yield* browserPage
      yield* promise(() => page.goto(`${url}/runs`))
      yield* promise(() => page.waitForSelector("#live.on"))
      // Three runs the page follows live: its stream has handed on their numbers.
      const old = [yield* run("one"), yield* run("two"), yield* run("three")]
      for (const runId of old) yield* promise(() => page.waitForSelector(`a[href="/runs/${runId}"]`))
      const loads: Array<string> = []
      page.on("load", () => loads.push(page.url()))

      yield* Scope.close(before, Exit.void)
      yield* serve(second)
      // The stream comes back on its own (EventSource retries), finds a store that numbers below
      // what it handed on, and the inspector loads again: the old project's runs go.
      yield* promise(() => page.waitForEvent("load", { timeout: 30_000 }))
      expect(loads).toEqual([`${url}/runs`])
      yield* promise(() => page.waitForSelector("#live.on"))
      expect(yield* promise(() => page.locator(`a[href="/runs/${old[0]}"]`).count())).toBe(0)
      // The new store's runs show as they happen, though numbered below the old ones.
      const fresh = yield* run("four")
      yield* promise(() => page.waitForSelector(`a[href="/runs/${fresh}"]`, { timeout: 10_000 }))
      // Once: the new store's numbers are its stream's own from then on.
      expect(loads).toHaveLength(1)
    }), { timeout: 90_000 })
})
