/**
 * A project for durable-execution tests: a tool with a visible side effect (a line appended to a
 * log file), a slow tool, a tool that needs approval, and a tool that always fails.
 */
import { join } from "node:path"
import type { ProjectFiles } from "./tempProject.js"

/** The files of the project; `log` is the absolute path of the side-effect log. */
export const durableProject = (log: string, config = ""): ProjectFiles => ({
  "agents/worker/agent.ts": `import { defineAgent } from "foundry"
import record from "./tools/record.tool.js"
import slow from "./tools/slow.tool.js"
import transfer from "./tools/transfer.tool.js"
import broken from "./tools/broken.tool.js"

export default defineAgent({ description: "Does work", tools: [record, slow, transfer, broken], maxTurns: 20 })
`,
  "agents/worker/tools/record.tool.ts": `import { appendFileSync } from "node:fs"
import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Record a line in the log",
  input: Schema.Struct({ line: Schema.String }),
  output: Schema.String,
  run: ({ line }, context) => Effect.sync(() => {
    appendFileSync(${JSON.stringify(log)}, context.runId + " " + context.toolCallId + " " + line + "\\n")
    return "recorded " + line
  })
})
`,
  "agents/worker/tools/slow.tool.ts": `import { appendFileSync } from "node:fs"
import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Work slowly for some milliseconds",
  input: Schema.Struct({ ms: Schema.Number }),
  output: Schema.String,
  run: ({ ms }, context) => Effect.gen(function*() {
    appendFileSync(${JSON.stringify(log)}, context.runId + " start " + Date.now() + "\\n")
    yield* Effect.sleep(ms)
    appendFileSync(${JSON.stringify(log)}, context.runId + " end " + Date.now() + "\\n")
    return "slept " + ms
  })
})
`,
  "agents/worker/tools/transfer.tool.ts": `import { appendFileSync } from "node:fs"
import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Transfer money (a person approves every transfer)",
  input: Schema.Struct({ amount: Schema.Number }),
  output: Schema.String,
  approval: "always",
  run: ({ amount }, context) => Effect.sync(() => {
    appendFileSync(${JSON.stringify(log)}, context.runId + " transfer " + amount + "\\n")
    return "transferred " + amount
  })
})
`,
  "agents/worker/tools/broken.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Always fails",
  input: Schema.Struct({}),
  output: Schema.String,
  run: () => Effect.fail({ _tag: "Broken", message: "this tool is broken" })
})
`,
  ...(config === "" ? {} : { "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig(${config})\n` })
})

/** The log file of a project root. */
export const logOf = (root: string): string => join(root, "side-effects.log")

/** What a test asks the planned model to do: a delay for turn 1, then these tool calls. */
export interface Plan {
  readonly delay?: number
  readonly calls?: ReadonlyArray<{ readonly name: string; readonly arguments: unknown }>
  /** When set, every turn calls these again (for failure limits). */
  readonly repeat?: boolean
}

/** A message that the planned model turns into tool calls. */
export const plan = (value: Plan): string => JSON.stringify(value)

/**
 * The text of a scripted model (for agent files, or `Scripted.make` in tests) that reads the run's
 * user message as a `Plan`: turn 1 makes the planned calls, later turns answer with the results.
 */
export const plannedScript = `(request, index) => {
  const users = request.messages.filter((m) => m._tag === "user")
  const plan = JSON.parse(users[users.length - 1].content)
  const results = request.messages.slice(request.messages.lastIndexOf(users[users.length - 1]))
    .filter((m) => m._tag === "tool").map((m) => m.content)
  if (index === 0 || plan.repeat) return { delay: plan.delay ?? 0, toolCalls: plan.calls ?? [] , text: (plan.calls ?? []).length === 0 ? "nothing to do" : "" }
  return { text: "done: " + results.join(" | ") }
}`
