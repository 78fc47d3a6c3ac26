/**
 * The bundles a built framework imports route files from live in `.foundry/routes/<process>/`, and
 * another process of the project cleans up those of processes that have ended. A server that has
 * not bundled for an hour still imports from its folder (a chunk a tool imports lazily, the first
 * time a run needs it), so its folder stays while it runs, however old.
 */
import { readdirSync, utimesSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { runCli, serveProject } from "../support/cli.js"
import { http, waitForRun } from "../support/server.js"
import { lazyProject } from "../support/lazyProject.js"
import { tempProject } from "../support/tempProject.js"


describe("route bundle folders", () => {
  it.scopedLive("a running server's bundle folder untouched for two hours is left to it by another process of the project", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(lazyProject)
      const { url } = yield* serveProject(root)
      const base = join(root, ".foundry/routes")
      const [serving] = readdirSync(base)
      expect(serving).toBeDefined()
      const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000)
      utimesSync(join(base, serving ?? ""), twoHoursAgo, twoHoursAgo)

      // Another process of the project bundles its route files too, and cleans up as it does.
      expect((yield* runCli(["check", root])).code).toBe(0)
      expect(readdirSync(base)).toContain(serving)

      const created = yield* http(`${url}/api/runs`, { body: { agent: "lazy", message: "go" } })
      expect(created.status).toBe(202)
      const run = yield* waitForRun(url, (created.json as { readonly runId: string }).runId)
      expect(run.status).toBe("completed")
      expect(run.output).toBe("from the heavy module")
    }), { timeout: 120_000 })
})
