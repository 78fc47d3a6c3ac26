/**
 * What a deploy says it changes, read off two releases' files: a route changed when its file or
 * anything it imports changed; the config counts as a change of its own, so a deploy that only
 * turns on auth or adds a layer does not say that nothing changed. Built releases are compared by
 * their sources, so that code esbuild moves between chunks changes no route whose sources stayed.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { buildRelease } from "../../src/release/ReleaseBuild.js"
import { configOfManifest, routeDigests, routesOfManifest, routesOfTable, sourcesOf, type SummaryRoute, summarize } from "../../src/release/releaseSummary.js"
import { discover } from "../../src/router/discover.js"
import { tempProject } from "../support/tempProject.js"

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
    (folder) => routeDigests(folder, routes, "foundry.config.ts", undefined)
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

const tool = (name: string, imports: string, answer: string) => `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
${imports}
export default defineTool({
  description: "${name}",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  run: ({ text }) => Effect.succeed(${answer})
})
`

describe("the summary of two builds of a project", () => {
  it.scoped("changes only the routes whose sources changed, though shared code moved into a chunk of its own", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/desk/agent.ts": `import { defineAgent } from "foundry"
import answer from "./tools/answer.tool.js"
import confirm from "./tools/confirm.tool.js"

export default defineAgent({ description: "A desk", model: "demo", tools: [answer, confirm] })
`,
        "agents/desk/lib/format.ts": `export const shout = (text: string): string => text.toUpperCase() + "!"\n`,
        "agents/desk/tools/answer.tool.ts": tool("Answers", `import { shout } from "../lib/format.js"`, "shout(text)"),
        "agents/desk/tools/confirm.tool.ts": tool("Confirms", "", "`confirmed: ${text}`"),
        "tools/clock.tool.ts": tool("Tells the time", "", "new Date().toISOString()"),
        "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ concurrency: 4 })\n`
      })
      const digestsOfBuild = Effect.gen(function*() {
        const built = yield* buildRelease(yield* discover(root, 1))
        const manifest: unknown = JSON.parse(readFileSync(join(built.folder, "release.json"), "utf8"))
        const inner = typeof manifest === "object" && manifest !== null && "manifest" in manifest ? manifest.manifest : undefined
        const sources = typeof manifest === "object" && manifest !== null && "sources" in manifest && typeof manifest.sources === "object" && manifest.sources !== null
          ? Object.fromEntries(Object.entries(manifest.sources).map(([key, value]) => [key, String(value)]))
          : undefined
        return routeDigests(built.folder, routesOfManifest(inner), configOfManifest(inner), sources)
      })
      const first = yield* digestsOfBuild
      // A server serving the project's sources (`foundry start <dir>`), then deployed a release of the same sources: nothing changed.
      const project = yield* discover(root, 1)
      const served = routeDigests(root, routesOfTable(project), project.configFile, yield* sourcesOf(project))
      expect(summarize(served, first)).toMatchObject({
        agents: { added: [], removed: [], changed: [] },
        tools: { added: [], removed: [], changed: [] },
        config: false
      })
      expect(summarize(first, yield* digestsOfBuild)).toMatchObject({
        agents: { changed: [] },
        tools: { changed: [] }
      })

      // confirm now imports the helper answer imports: esbuild moves it out of answer's chunk.
      writeFileSync(join(root, "agents/desk/tools/confirm.tool.ts"), tool("Confirms", `import { shout } from "../lib/format.js"`, "`confirmed: ${shout(text)}`"))
      const second = yield* digestsOfBuild
      expect(summarize(first, second)).toMatchObject({
        agents: { added: [], removed: [], changed: ["desk"] },
        tools: { added: [], removed: [], changed: ["desk/confirm"] }
      })

      // The helper itself changed: every route that runs it.
      writeFileSync(join(root, "agents/desk/lib/format.ts"), `export const shout = (text: string): string => text.toUpperCase() + "!!"\n`)
      expect(summarize(second, yield* digestsOfBuild)).toMatchObject({
        agents: { changed: ["desk"] },
        tools: { changed: ["desk/answer", "desk/confirm"] }
      })
    }).pipe(Effect.provide(NodeContext.layer)))
})
