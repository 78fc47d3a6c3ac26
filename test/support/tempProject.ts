/**
 * Temporary project folders for tests, outside the repository (so they prove that a project
 * needs no install to import "foundry" and "effect"), removed when the test's scope closes.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { Effect } from "effect"

/** Files of a project: relative path -> content. */
export type ProjectFiles = Readonly<Record<string, string>>

/** Writes `files` into `root`, creating folders as needed. */
export const writeFiles = (root: string, files: ProjectFiles): void => {
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, file)), { recursive: true })
    writeFileSync(join(root, file), content)
  }
}

/** Writes a project holding `files` (plus an ESM package.json) into `root`. */
export const writeProject = (root: string, files: ProjectFiles): void => writeFiles(root, { "package.json": "{\"type\":\"module\"}\n", ...files })

/** A new project folder holding `files` (plus an ESM package.json), removed afterwards. */
export const tempProject = (files: ProjectFiles) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const root = mkdtempSync(join(tmpdir(), "foundry-test-"))
      writeProject(root, files)
      return root
    }),
    (root) => Effect.sync(() => rmSync(root, { recursive: true, force: true }))
  )

/** A minimal agent file. */
export const agentFile = (options: { readonly description?: string; readonly tools?: ReadonlyArray<string>; readonly imports?: string } = {}) =>
  `import { defineAgent } from "foundry"
${options.imports ?? ""}
export default defineAgent({
  description: ${JSON.stringify(options.description ?? "A test agent")},
  model: "demo",
  tools: [${(options.tools ?? []).join(", ")}]
})
`

/** A minimal tool file. */
export const toolFile = (description = "Echo the text back") =>
  `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: ${JSON.stringify(description)},
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  run: ({ text }) => Effect.succeed(text)
})
`

/**
 * An agent on a scripted model: turn 1 calls its `answer` tool, turn 2 answers with what the tool
 * returned, so a run's output shows which build's tool ran.
 */
export const answeringAgentFile = `import { defineAgent, Scripted } from "foundry"
import answer from "./tools/answer.tool.js"

export default defineAgent({
  description: "Answers with whatever its tool returns",
  tools: [answer],
  model: Scripted.make((request, index) => {
    if (index === 0) return { toolCalls: [{ name: "answer", arguments: {} }] }
    const results = request.messages.filter((m) => m._tag === "tool")
    return { text: "the tool said: " + (results.length === 0 ? "nothing" : results[results.length - 1].content) }
  })
})
`

/** The `answer` tool of `answeringAgentFile`, returning `value` (an expression), with extra imports if any. */
export const answerToolFile = (value: string, imports = "") => `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
${imports}
export default defineTool({
  description: "Returns the current answer",
  input: Schema.Struct({}),
  output: Schema.String,
  run: () => Effect.succeed(${value})
})
`

/** An agent `payer` on a scripted model that calls its tool `pay` once, then answers; `approval` is the tool's policy (an expression). */
export const payerFiles = (approval: string): ProjectFiles => ({
  "agents/payer/agent.ts": `import { defineAgent, Scripted } from "foundry"
import pay from "./tools/pay.tool.js"
export default defineAgent({ description: "Pays", tools: [pay], model: Scripted.make([{ toolCalls: [{ name: "pay", arguments: {} }] }, { text: "paid" }]) })
`,
  "agents/payer/tools/pay.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
export default defineTool({
  description: "Pays",
  input: Schema.Struct({}),
  output: Schema.String,
  approval: ${approval},
  run: () => Effect.succeed("paid")
})
`
})
