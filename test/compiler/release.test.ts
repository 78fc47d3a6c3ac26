/**
 * The release id of a build: `dev-<hash>` of the route files, the config file and the helpers they
 * may import, so that two builds of the same sources share it and any edit of them changes it.
 */
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { emptyApp, loadProject } from "../../src/compiler/loadProject.js"
import { loadConfig } from "../../src/router/loadConfig.js"
import { serveProject } from "../support/cli.js"
import { agentFile, tempProject, toolFile } from "../support/tempProject.js"

const files = {
  "agents/shop/agent.ts": agentFile({ tools: ["echo"], imports: `import echo from "./tools/echo.tool.js"` }),
  "agents/shop/tools/echo.tool.ts": toolFile(),
  "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ concurrency: 4 })\n`
}

const releaseAt = (root: string, generation: number) =>
  loadProject(root, generation).pipe(Effect.map((app) => app.release), Effect.provide(NodeContext.layer))

describe("the release of a build", () => {
  it.scoped("is the same for two builds of the same sources, in any folder, and changes after an edit", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(files)
      const first = yield* releaseAt(root, 1)
      expect(first).toMatch(/^dev-[0-9a-f]{12}$/)
      expect(yield* releaseAt(root, 2)).toBe(first)
      expect(yield* releaseAt(yield* tempProject(files), 1)).toBe(first)

      writeFileSync(join(root, "agents/shop/tools/echo.tool.ts"), toolFile("Echo the text back, unchanged"))
      const edited = yield* releaseAt(root, 3)
      expect(edited).toMatch(/^dev-[0-9a-f]{12}$/)
      expect(edited).not.toBe(first)

      writeFileSync(join(root, "foundry.config.ts"), `import { defineConfig } from "foundry"\nexport default defineConfig({ concurrency: 5 })\n`)
      const reconfigured = yield* releaseAt(root, 4)
      expect(reconfigured).not.toBe(edited)
      expect(reconfigured).not.toBe(first)
    }))

  it.scoped("a new route file changes it", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(files)
      const before = yield* releaseAt(root, 1)
      writeFileSync(join(root, "agents/shop/tools/other.tool.ts"), toolFile("Another tool"))
      expect(yield* releaseAt(root, 2)).not.toBe(before)
    }))

  it.scopedLive("two foundry start runs on sources that differ only in a lib/ helper serve different releases", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "lib/greeting.ts": `export const greeting = "hello"\n`,
        "agents/greeter/agent.ts": agentFile({ description: "Greets", imports: `import { greeting } from "../../lib/greeting.js"\nvoid greeting` })
      })
      const served = Effect.scoped(Effect.gen(function*() {
        const { server } = yield* serveProject(root)
        return /release: (\S+)/.exec(server.output())?.[1]
      }))
      const before = yield* served
      expect(before).toMatch(/^dev-[0-9a-f]{12}$/)
      writeFileSync(join(root, "lib/greeting.ts"), `export const greeting = "good morning"\n`)
      const after = yield* served
      expect(after).toMatch(/^dev-[0-9a-f]{12}$/)
      expect(after).not.toBe(before)
    }), { timeout: 60_000 })

  it.scoped("the app served before a first good build has the release of the same sources", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(files)
      const config = yield* loadConfig(root, 1).pipe(Effect.provide(NodeContext.layer))
      expect(emptyApp(root, config).release).toBe(yield* releaseAt(root, 2))
    }))
})
