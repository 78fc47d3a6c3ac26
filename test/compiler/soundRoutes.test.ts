/**
 * The sound part of a project (what `foundry dev` serves while some files do not build): a route
 * is left out with whatever uses it, and each one left out says what it waits for.
 */
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { loadSoundRoutes } from "../../src/compiler/soundRoutes.js"
import { loadConfig } from "../../src/router/loadConfig.js"
import { tempProject } from "../support/tempProject.js"

const tool = (name: string) => `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
export default defineTool({ description: "${name}", input: Schema.Struct({}), output: Schema.String, run: () => Effect.succeed("${name}") })
`

describe("the sound part of a project", () => {
  it.scoped("leaves out an environment whose scripts import a tool that does not build, and the agents that use either", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "tools/lookup.tool.ts": `import { defineTool } from "foundry"
// Loads, but is no valid tool: its input is not a Schema.
export default defineTool({ description: "lookup", input: { orderId: "string" } as any, output: undefined as any, run: undefined as any })
`,
        "tools/notes.tool.ts": tool("notes"),
        "environments/desk.ts": `import { defineEnvironment, defineTools } from "foundry"
import lookup from "../tools/lookup.tool.js"
export default defineEnvironment({ modules: [defineTools({ name: "orders", tools: { lookup } })] })
`,
        "environments/plain.ts": `import { defineEnvironment } from "foundry"
export default defineEnvironment({})
`,
        "agents/clerk/agent.ts": `import { defineAgent } from "foundry"
import desk from "../../environments/desk.js"
export default defineAgent({ description: "works at the desk", environment: desk })
`,
        "agents/writer/agent.ts": `import { defineAgent } from "foundry"
import notes from "../../tools/notes.tool.js"
import plain from "../../environments/plain.js"
export default defineAgent({ description: "writes notes", tools: [notes], environment: plain })
`
      })
      const config = yield* loadConfig(root, 1)
      const { app, problems } = yield* loadSoundRoutes(root, 1, config)
      expect(app.table.agents.map((route) => route.id)).toEqual(["writer"])
      expect(app.table.environments.map((route) => route.id)).toEqual(["plain"])
      const byFile = new Map(problems.errors.map((error) => [error.file, error]))
      expect([...byFile.keys()].sort()).toEqual(["agents/clerk/agent.ts", "environments/desk.ts", "tools/lookup.tool.ts"])
      expect(byFile.get("environments/desk.ts")).toMatchObject({ problem: "not served: it uses tools/lookup.tool.ts, which does not build" })
      expect(byFile.get("agents/clerk/agent.ts")).toMatchObject({ problem: "not served: it uses environments/desk.ts, which does not build" })
      expect((app.leftOut ?? []).map((route) => `${route.kind} ${route.id}`).sort()).toEqual(["agent clerk", "environment desk", "tool lookup"])
    }).pipe(Effect.provide(NodeContext.layer)))
})
