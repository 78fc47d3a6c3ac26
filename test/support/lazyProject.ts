/**
 * A project whose tool imports a module only when it runs, which esbuild puts in a chunk of its
 * own: what a release's lazily loaded code needs to find on disk.
 */
export const lazyProject = {
  "agents/lazy/lib/heavy.ts": `export const answer = "from the heavy module"\n`,
  "agents/lazy/tools/heavy.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Answers from a module it imports when it runs",
  input: Schema.Struct({}),
  output: Schema.String,
  run: () => Effect.map(Effect.promise(() => import("../lib/heavy.js")), (heavy) => heavy.answer)
})
`,
  "agents/lazy/agent.ts": `import { defineAgent, Scripted } from "foundry"
import heavy from "./tools/heavy.tool.js"

export default defineAgent({
  description: "Calls its tool and says what it answered",
  tools: [heavy],
  model: Scripted.make((request, index) => {
    if (index === 0) return { toolCalls: [{ name: "heavy", arguments: {} }] }
    return { text: request.messages.filter((m) => m._tag === "tool").map((m) => m.content).join(" ") }
  })
})
`
}
