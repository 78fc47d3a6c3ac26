/**
 * A project for durable-execution tests: a tool with a visible side effect (a line appended to a
 * log file), a slow tool, a tool that needs approval, and a tool that always fails. With
 * `timers: true` the worker also has the built-in timer tools.
 */
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { freshDatabase } from "./postgres.js"
import { type ProjectFiles, tempProject } from "./tempProject.js"

/** The files of the project; `log` is the absolute path of the side-effect log. */
export const durableProject = (
  log: string,
  config = "",
  options: { readonly plannedModelInFile?: boolean; readonly timers?: boolean } = {}
): ProjectFiles => ({
  "agents/worker/agent.ts": `import { existsSync } from "node:fs"
import { defineAgent, Scripted } from "foundry"
import record from "./tools/record.tool.js"
import slow from "./tools/slow.tool.js"
import transfer from "./tools/transfer.tool.js"
import broken from "./tools/broken.tool.js"
import charge from "./tools/charge.tool.js"

export default defineAgent({
  description: "Does work",
  tools: [record, slow, transfer, broken, charge],${options.timers === true ? "\n  timers: true," : ""}
  maxTurns: 20${options.plannedModelInFile === true ? `,\n  model: Scripted.make(${plannedScript(slowMarkerOf(log))})` : ""}
})
`,
  "agents/lead/agent.ts": `import { existsSync } from "node:fs"
import { defineAgent, Scripted } from "foundry"
import worker from "../worker/agent.js"
import note from "./tools/note.tool.js"

export default defineAgent({
  description: "Leads: delegates to the worker",
  tools: [note],
  subagents: [worker],
  maxTurns: 20${options.plannedModelInFile === true ? `,\n  model: Scripted.make(${plannedScript(slowMarkerOf(log))})` : ""}
})
`,
  "agents/lead/tools/note.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
import worker from "../../worker/agent.js"

export default defineTool({
  description: "Hand a note to the worker without waiting",
  input: Schema.Struct({ message: Schema.String }),
  output: Schema.String,
  run: ({ message }, context) =>
    Effect.map(Effect.orDie(context.spawn(worker, message)), (started) => "spawned " + started.runId)
})
`,
  "agents/worker/tools/charge.tool.ts": `import { appendFileSync, existsSync, readFileSync } from "node:fs"
import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

// Exactly once: the side effect is keyed by the idempotency key, which survives a crash.
export default defineTool({
  description: "Charge a card once, then settle for some milliseconds",
  input: Schema.Struct({ id: Schema.String, ms: Schema.Number }),
  output: Schema.String,
  idempotencyKey: ({ id }) => "charge-" + id,
  run: ({ ms }, context) => Effect.gen(function*() {
    const done = existsSync(${JSON.stringify(log)}) && readFileSync(${JSON.stringify(log)}, "utf8").split("\\n").includes(context.idempotencyKey)
    if (!done) appendFileSync(${JSON.stringify(log)}, context.idempotencyKey + "\\n")
    yield* Effect.sleep(existsSync(${JSON.stringify(slowMarkerOf(log))}) ? ms : 0)
    return "charged"
  })
})
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
    yield* Effect.sleep(ms).pipe(
      Effect.onInterrupt(() => Effect.sync(() => appendFileSync(${JSON.stringify(log)}, context.runId + " interrupted " + Date.now() + "\\n")))
    )
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

/**
 * The project in a folder of its own, its store a fresh PostgreSQL database: the database's URL,
 * the side-effect log and the project's root, for as long as the scope lasts.
 */
export const durableProjectOnPostgres = (options: { readonly timers?: boolean } = {}) =>
  Effect.gen(function*() {
    const url = yield* freshDatabase
    const log = join(tmpdir(), `foundry-log-${randomUUID()}.log`)
    const root = yield* tempProject(durableProject(log, `{ store: { postgres: ${JSON.stringify(url)} } }`, options))
    return { url, log, root }
  })

/** The log file of a project root. */
export const logOf = (root: string): string => join(root, "side-effects.log")

/** What a test asks the planned model to do: a delay for turn 1, then these tool calls. */
export interface Plan {
  readonly delay?: number
  /** The delay of the turns after the first. */
  readonly finalDelay?: number
  readonly calls?: ReadonlyArray<{ readonly name: string; readonly arguments: unknown }>
  /** When set, every turn calls these again (for failure limits). */
  readonly repeat?: boolean
  /** The last turn's answer, instead of the results; written a word every `wordDelay` ms when set. */
  readonly say?: string
  readonly wordDelay?: number
}

/** A message that the planned model turns into tool calls. */
export const plan = (value: Plan): string => JSON.stringify(value)

/** While this file exists, planned delays (and the charge tool's settling) are real; without it, zero. */
export const slowMarkerOf = (log: string): string => `${log}.slow`

/**
 * The text of a scripted model for agent files that reads the run's user message as a `Plan`:
 * turn 1 makes the planned calls, later turns answer with the results. Delays apply only while
 * `marker` exists, so a test can make a restarted process fast.
 */
export const plannedScript = (marker: string) => `(request, index) => {
  const slow = (ms) => (ms !== undefined && existsSync(${JSON.stringify(marker)}) ? ms : 0)
  const users = request.messages.filter((m) => m._tag === "user")
  const plan = JSON.parse(users[users.length - 1].content)
  const results = request.messages.slice(request.messages.lastIndexOf(users[users.length - 1]))
    .filter((m) => m._tag === "tool").map((m) => m.content)
  if (index === 0 || plan.repeat) return { delay: slow(plan.delay), toolCalls: plan.calls ?? [] , text: (plan.calls ?? []).length === 0 ? "nothing to do" : "" }
  const answer = { delay: slow(plan.finalDelay), text: plan.say ?? "done: " + results.join(" | ") }
  return plan.wordDelay === undefined ? answer : { ...answer, chunkDelay: slow(plan.wordDelay) }
}`
