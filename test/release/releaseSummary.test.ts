/**
 * What a deploy says it changes, read off two releases' files: a route changed when its file or
 * anything it imports changed; the config counts as a change of its own, so a deploy that only
 * turns on auth or adds a layer does not say that nothing changed.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { routeDigests, type SummaryRoute, summarize } from "../../src/release/releaseSummary.js"

/** A folder holding `files`, removed afterwards. */
const folderOf = (files: Readonly<Record<string, string>>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const folder = mkdtempSync(join(tmpdir(), "foundry-summary-"))
      for (const [file, content] of Object.entries(files)) {
        mkdirSync(dirname(join(folder, file)), { recursive: true })
        writeFileSync(join(folder, file), content)
      }
      return folder
    }),
    (folder) => Effect.sync(() => rmSync(folder, { recursive: true, force: true }))
  )

const routes: ReadonlyArray<SummaryRoute> = [
  { kind: "agents", id: "desk", file: "agents/desk/agent.js" },
  { kind: "tools", id: "desk/answer", file: "agents/desk/tools/answer.tool.js" }
]

const release = (files: { readonly answer: string; readonly shared: string; readonly config: string }) =>
  Effect.map(
    folderOf({
      "agents/desk/agent.js": `import answer from "./tools/answer.tool.js"\nexport default { tools: [answer] }\n`,
      "agents/desk/tools/answer.tool.js": `import { words } from "../../../chunks/shared.js"\nexport default ${JSON.stringify(files.answer)}\n`,
      "chunks/shared.js": `export const words = ${JSON.stringify(files.shared)}\n`,
      "foundry.config.js": files.config
    }),
    (folder) => routeDigests(folder, routes, "foundry.config.ts")
  )

describe("a release's summary against the one before it", () => {
  it.scoped("names the routes whose code changed, through what they import, and says when only the config changed", () =>
    Effect.gen(function*() {
      const base = { answer: "v1", shared: "a", config: "export default { auth: { required: false } }\n" }
      const first = yield* release(base)
      const unchanged = { agents: { added: [], removed: [], changed: [] }, tools: { added: [], removed: [], changed: [] } }

      expect(summarize(first, yield* release(base))).toMatchObject({ ...unchanged, config: false })
      // A chunk the tool imports changed: the tool, and the agent that imports the tool.
      expect(summarize(first, yield* release({ ...base, shared: "b" }))).toMatchObject({
        agents: { changed: ["desk"] },
        tools: { changed: ["desk/answer"] },
        config: false
      })
      // Only the config: no route changed, and the summary says the config did.
      expect(summarize(first, yield* release({ ...base, config: "export default { auth: { required: true } }\n" })))
        .toMatchObject({ ...unchanged, config: true })
      // Against nothing (a first deploy), everything is added and the config is no change.
      expect(summarize(undefined, first)).toMatchObject({ agents: { added: ["desk"] }, tools: { added: ["desk/answer"] }, config: false })
    }))
})
