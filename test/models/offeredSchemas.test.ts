/**
 * Every tool the example's agents offer a model, built-in ones included (an environment's verbs,
 * timers, subagents), has a schema OpenAI takes (no object without `properties`, no array
 * without `items`, by the rule the strict fake provider refuses requests with) and a description
 * of at most 1024 characters.
 */
import { cpSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { loadProject } from "../../src/compiler/loadProject.js"
import { incompleteSchema } from "../support/strictOpenAi.js"

const repository = new URL("../../", import.meta.url).pathname

/** A copy of the example project: loading it writes `.foundry/`. */
const exampleCopy = Effect.acquireRelease(
  Effect.sync(() => {
    const root = mkdtempSync(join(tmpdir(), "foundry-schemas-"))
    for (const entry of ["agents", "tools", "mcp", "playbooks", "schedules", "environments", "lib", "foundry.config.ts", "package.json"]) {
      cpSync(join(repository, entry), join(root, entry), { recursive: true })
    }
    return root
  }),
  (root) => Effect.sync(() => rmSync(root, { recursive: true, force: true }))
)

describe("the tools offered to models", () => {
  it.scopedLive("have schemas and descriptions OpenAI takes, built-in ones included", () =>
    Effect.gen(function*() {
      const app = yield* loadProject(yield* exampleCopy, 1)
      const offered = [...app.agents.values()].flatMap((agent) => [...agent.tools.values()].map((tool) => ({ agent: agent.id, tool })))
      // The example's workspace environment gives its agent the verbs: they are among those checked.
      expect(offered.map(({ tool }) => tool.name)).toContain("run_script")
      const refused = offered.flatMap(({ agent, tool }) => {
        const problem = tool.spec.parameters === undefined ? undefined : incompleteSchema(tool.spec.parameters, [])
        return problem === undefined ? [] : [`${agent} ${tool.name}: ${problem.problem} at (${problem.context.join(", ")})`]
      })
      expect(refused).toEqual([])
      expect(offered.filter(({ tool }) => tool.spec.description.length > 1024).map(({ tool }) => tool.name)).toEqual([])
    }).pipe(Effect.provide(NodeContext.layer)))
})
