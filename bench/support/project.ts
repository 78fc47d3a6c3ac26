/**
 * Temporary projects for benchmarks: route files written into a fresh folder outside the
 * repository (as the tests do), removed when the scope closes.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { Effect } from "effect"
import * as Scripted from "../../src/models/scripted.js"

/** Files of a project: relative path -> content. */
export type ProjectFiles = Readonly<Record<string, string>>

/** A new project folder holding `files` (plus an ESM package.json), removed when the scope closes. */
export const tempProject = (files: ProjectFiles) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const root = mkdtempSync(join(tmpdir(), "foundry-bench-"))
      for (const [file, content] of Object.entries({ "package.json": "{\"type\":\"module\"}\n", ...files })) {
        mkdirSync(dirname(join(root, file)), { recursive: true })
        writeFileSync(join(root, file), content)
      }
      return root
    }),
    (root) => Effect.sync(() => rmSync(root, { recursive: true, force: true }))
  )

/**
 * The reference workload's tool: `lookup({ id })` appends `<runId> <id>` to `sideEffectFile` (one
 * line per execution, so duplicates can be counted per run) and returns a string.
 */
export const lookupTool = (sideEffectFile: string): string =>
  `import { appendFileSync } from "node:fs"
import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Look up an order by id",
  input: Schema.Struct({ id: Schema.String }),
  output: Schema.String,
  run: ({ id }, { runId }) =>
    Effect.sync(() => {
      appendFileSync(${JSON.stringify(sideEffectFile)}, runId + " " + id + "\\n")
      return "order " + id + " has shipped"
    })
})
`

/** An agent using the lookup tool at `agents/<id>/tools/lookup.tool.ts`, on `model` (source text). */
export const lookupAgent = (options: { readonly model: string; readonly imports?: string }): string =>
  `import { defineAgent } from "foundry"
${options.imports ?? ""}
import lookup from "./tools/lookup.tool.js"

export default defineAgent({
  description: "Answers questions about orders",
  instructions: "Look the order up, then answer.",
  model: ${options.model},
  tools: [lookup],
  maxTurns: 4
})
`

/** The environment variable the delayed model reads its answer's delay from, in each process. */
export const modelDelayVariable = "FOUNDRY_BENCH_MODEL_DELAY_MS"

/**
 * The reference workload's model as agent-file source, for `foundry start` processes: turn 1
 * calls `lookup`, turn 2 answers after `$FOUNDRY_BENCH_MODEL_DELAY_MS` (so a benchmark can keep
 * runs in flight in one process and not in the next). Needs `import { Scripted } from "foundry"`.
 */
export const delayedLookupModel = `Scripted.make((_request, index) =>
    index === 0
      ? { toolCalls: [{ name: "lookup", arguments: { id: "42" } }] }
      : { text: "Order 42 has shipped.", delay: Number(process.env.${modelDelayVariable} ?? "0") })`

/** The reference workload's script: a tool call, then the answer. */
export const orderLookupScript: Scripted.Script = [
  { toolCalls: [{ name: "lookup", arguments: { id: "42" } }] },
  { text: "Order 42 has shipped and arrives on Friday." }
]

/** The reference workload's project, its config's `store` (a field, or nothing) as given, and a folder beside it. */
const orderLookupFiles = (concurrency: number, store: string) =>
  Effect.gen(function*() {
    const dir = yield* tempProject({})
    const sideEffects = join(dir, "lookups.log")
    const root = yield* tempProject({
      "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ ${store}concurrency: ${concurrency} })\n`,
      "agents/orders/agent.ts": lookupAgent({ model: `"demo"` }),
      "agents/orders/tools/lookup.tool.ts": lookupTool(sideEffects)
    })
    return { dir, project: { root, sideEffects, model: Scripted.make(orderLookupScript) } }
  })

/**
 * The reference workload's project: one agent and its `lookup` tool, `concurrency` runs at once;
 * `sideEffects` is the file the tool appends to, `storeFile` a store beside it.
 */
export const orderLookupProject = (concurrency: number) =>
  Effect.map(orderLookupFiles(concurrency, ""), ({ dir, project }) => ({ ...project, storeFile: join(dir, "foundry.db") }))

/** The same project on the PostgreSQL database at `url`: its config's store (`storeFile` none). */
export const orderLookupProjectOn = (concurrency: number, url: string) =>
  Effect.map(orderLookupFiles(concurrency, `store: { postgres: ${JSON.stringify(url)} }, `), ({ project }) => ({ ...project, storeFile: undefined }))
