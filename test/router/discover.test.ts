/**
 * Discovery of real projects in temporary folders: the route table of a good project, and
 * reloading (a new generation sees the files as they are now, helpers included).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { RouteTable } from "../../src/router/RouteTable.js"
import { tempProject, writeFiles } from "../support/tempProject.js"
import { agentFile, discoverAt, discoverProject, goodProject, routeErrorsAt, toolFile } from "./support.js"

const ids = (routes: ReadonlyArray<{ readonly id: string }>) => routes.map((r) => r.id).sort()

const byId = <R extends { readonly id: string }>(routes: ReadonlyArray<R>, id: string): R => {
  const route = routes.find((r) => r.id === id)
  if (route === undefined) return expect.fail(`no route "${id}" among ${routes.map((r) => r.id).join(", ")}`)
  return route
}

describe("discovering a good project", () => {
  it.scoped("finds every route with its id and file, and nothing that is not a route", () =>
    Effect.gen(function*() {
      const table = yield* discoverProject(goodProject)
      expect(table.agents.map((r) => [r.id, r.file]).sort()).toEqual([
        ["support", "agents/support/agent.ts"],
        ["support/triage", "agents/support/triage/agent.ts"]
      ])
      expect(table.tools.map((r) => [r.id, r.file, r.agent]).sort()).toEqual([
        ["current-time", "tools/current-time.tool.ts", undefined],
        ["support/lookup-order", "agents/support/tools/lookup-order.tool.ts", "support"],
        ["support/triage/classify", "agents/support/triage/classify.tool.ts", "support/triage"]
      ])
      expect(ids(table.schedules)).toEqual(["daily-review", "team/hourly"])
      expect(ids(table.playbooks)).toEqual(["urgent-ticket"])
      expect(ids(table.environments)).toEqual(["workspace"])
    }))

  it.scoped("the root is absolute and the config is loaded from foundry.config.ts", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(goodProject)
      const table = yield* discoverAt(root)
      expect(table.root).toBe(root)
      expect(table.configFile).toBe("foundry.config.ts")
      expect(table.config.server.port).toBe(5151)
      expect(table.config.layers).toHaveLength(1)
    }))

  it.scoped("imported relationships resolve to route ids by identity", () =>
    Effect.gen(function*() {
      const table = yield* discoverProject(goodProject)
      const support = byId(table.agents, "support").definition
      expect(support.description).toBe("Answers questions about orders")
      expect(support.tools.map((tool) => table.idOf(tool))).toEqual(["support/lookup-order", "current-time"])
      expect(support.tools[0]).toBe(byId(table.tools, "support/lookup-order").definition)
      expect(support.environment === undefined ? undefined : table.idOf(support.environment)).toBe("workspace")
      expect(table.idOf(byId(table.schedules, "daily-review").definition.agent)).toBe("support")
      expect(table.idOf(byId(table.schedules, "team/hourly").definition.agent)).toBe("support")
      expect(table.idOf(byId(table.playbooks, "urgent-ticket").definition.agent)).toBe("support/triage")
      expect(table.idOf({})).toBeUndefined()
    }))

  it.scoped("a project without config gets the default one, and empty route folders are fine", () =>
    Effect.gen(function*() {
      const table = yield* discoverProject({ "agents/solo/agent.ts": agentFile(), "schedules/_later.ts": "export {}\n" })
      expect(ids(table.agents)).toEqual(["solo"])
      expect(table.configFile).toBeUndefined()
      expect(table.config.server).toEqual({ port: 4141, host: "127.0.0.1", bodyLimit: 1_048_576, sseHeartbeat: "15 seconds" })
      expect([table.tools, table.playbooks, table.schedules, table.environments]).toEqual([[], [], [], []])
    }))

  it.scoped("a project with no route folders at all has an empty table", () =>
    Effect.gen(function*() {
      const table = yield* discoverProject({})
      expect([table.agents, table.tools, table.playbooks, table.schedules, table.environments]).toEqual([[], [], [], [], []])
    }))

  it.scoped("helpers, non-tool files in agent folders, .d.ts and dot folders are not loaded as routes", () =>
    Effect.gen(function*() {
      // Each of these would be a broken route if it were loaded as one.
      const broken = `throw new Error("a helper was loaded as a route")\n`
      const table = yield* discoverProject({
        "agents/a/agent.ts": agentFile(),
        "agents/a/prompt.ts": broken,
        "agents/a/lib/x.tool.ts": broken,
        "agents/a/_draft.tool.ts": broken,
        "agents/_private/agent.ts": broken,
        "schedules/_helper.ts": broken,
        "schedules/lib/shared.ts": broken,
        "playbooks/_private/draft.ts": broken,
        "environments/types.d.ts": "export declare const x: number\n",
        "tools/format.ts": broken,
        "tools/.cache/x.tool.ts": broken,
        "schedules/notes.md": "not code"
      })
      expect(ids(table.agents)).toEqual(["a"])
      expect([table.tools, table.playbooks, table.schedules, table.environments]).toEqual([[], [], [], []])
    }))

  it.scoped(".js and .mjs route files load like .ts ones", () =>
    Effect.gen(function*() {
      const table = yield* discoverProject({
        "agents/a/agent.js": `import { defineAgent } from "foundry"
import echo from "./echo.tool.mjs"
export default defineAgent({ description: "plain JavaScript", tools: [echo] })
`,
        "agents/a/echo.tool.mjs": toolFile()
      })
      expect(byId(table.agents, "a").definition.description).toBe("plain JavaScript")
      expect(byId(table.tools, "a/echo")).toMatchObject({ file: "agents/a/echo.tool.mjs", agent: "a" })
    }))

  it.scoped("an import of ./x.js loads x.ts, the file TypeScript checked, even with an old x.js beside it", () =>
    Effect.gen(function*() {
      const table = yield* discoverProject({
        "agents/a/agent.ts": `import { defineAgent } from "foundry"
import { text } from "./lib/text.js"
export default defineAgent({ description: text })
`,
        "agents/a/lib/text.ts": `export const text = "from the TypeScript source"\n`,
        "agents/a/lib/text.js": `export const text = "from an old compile"\n`
      })
      expect(byId(table.agents, "a").definition.description).toBe("from the TypeScript source")
    }))
})

describe("reloading", () => {
  it.scoped("a new generation sees the new content of a route file and of a helper it imports", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/a/agent.ts": `import { defineAgent } from "foundry"
import { text } from "./lib/text.js"
export default defineAgent({ description: text, maxTurns: 3 })
`,
        "agents/a/lib/text.ts": `export const text = "first description"\n`
      })
      const first = yield* discoverAt(root, 1)
      expect(byId(first.agents, "a").definition).toMatchObject({ description: "first description", maxTurns: 3 })

      writeFiles(root, {
        "agents/a/agent.ts": `import { defineAgent } from "foundry"
import { text } from "./lib/text.js"
export default defineAgent({ description: text, maxTurns: 5 })
`,
        "agents/a/lib/text.ts": `export const text = "second description"\n`
      })
      const second = yield* discoverAt(root, 2)
      expect(byId(second.agents, "a").definition).toMatchObject({ description: "second description", maxTurns: 5 })
      // The first table is a value: reloading does not change it.
      expect(byId(first.agents, "a").definition.description).toBe("first description")
    }))

  it.scoped("a change only in a helper is seen too", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/a/agent.ts": `import { defineAgent } from "foundry"
import { text } from "./lib/text.js"
export default defineAgent({ description: text })
`,
        "agents/a/lib/text.ts": `export const text = "before"\n`
      })
      expect(byId((yield* discoverAt(root, 1)).agents, "a").definition.description).toBe("before")
      writeFiles(root, { "agents/a/lib/text.ts": `export const text = "after"\n` })
      expect(byId((yield* discoverAt(root, 2)).agents, "a").definition.description).toBe("after")
    }))

  it.scoped("relationships stay consistent within a generation after a reload", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(goodProject)
      const first = yield* discoverAt(root, 1)
      const second = yield* discoverAt(root, 2)
      const agentOf = (table: RouteTable) => byId(table.schedules, "daily-review").definition.agent
      expect(second.idOf(agentOf(second))).toBe("support")
      expect(agentOf(second)).toBe(byId(second.agents, "support").definition)
      expect(agentOf(second)).not.toBe(agentOf(first))
    }))

  it.scoped("new, removed and renamed files are seen by the next generation", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "agents/a/agent.ts": agentFile() })
      expect(ids((yield* discoverAt(root, 1)).agents)).toEqual(["a"])
      writeFiles(root, { "agents/b/agent.ts": agentFile(), "tools/echo.tool.ts": toolFile() })
      const second = yield* discoverAt(root, 2)
      expect(ids(second.agents)).toEqual(["a", "b"])
      expect(ids(second.tools)).toEqual(["echo"])
    }))

  it.scoped("a file broken and then fixed: the next generation succeeds", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "agents/a/agent.ts": agentFile({ description: "good" }) })
      yield* discoverAt(root, 1)
      writeFiles(root, { "agents/a/agent.ts": `throw new Error("broken for a moment")\n` })
      const errors = yield* routeErrorsAt(root, 2)
      expect(errors.errors.map((e) => e.file)).toEqual(["agents/a/agent.ts"])
      expect(errors.errors[0]?.problem).toContain("broken for a moment")
      writeFiles(root, { "agents/a/agent.ts": agentFile({ description: "fixed" }) })
      const third = yield* discoverAt(root, 3)
      expect(byId(third.agents, "a").definition.description).toBe("fixed")
    }))
})
