/**
 * Tools from scripts: a Foundry tool listed in `defineTools` and every tool of one of the agent's
 * MCP servers (the stdio fixture server, a real MCP SDK server in a child process), called from a
 * script as async functions, with their declarations generated under /std.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Scripted from "../../src/models/scripted.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const repoRoot = fileURLToPath(new URL("../..", import.meta.url))
const stdioFixture = fileURLToPath(new URL("../mcp/fixtures/stdioServer.ts", import.meta.url))

const files = (log: string) => ({
  "tools/shout.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Shout the text",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.Struct({ shouted: Schema.String }),
  run: ({ text }) => Effect.succeed({ shouted: text.toUpperCase() + "!" })
})
`,
  "environments/workspace.ts": `import { defineEnvironment, defineTools } from "foundry"
import shout from "../tools/shout.tool.js"

export default defineEnvironment({
  modules: [defineTools({ name: "mine", tools: { shout } }), defineTools({ name: "files", mcp: "files" })]
})
`,
  "agents/worker/agent.ts": `import { defineAgent } from "foundry"
import workspace from "../../environments/workspace.js"

export default defineAgent({
  description: "Scripts against tools",
  model: "demo",
  environment: workspace,
  mcp: {
    files: {
      command: ${JSON.stringify(process.execPath)},
      args: ["--import", "tsx", ${JSON.stringify(stdioFixture)}],
      cwd: ${JSON.stringify(repoRoot)},
      env: { FIXTURE_LOG: ${JSON.stringify(log)} }
    }
  }
})
`
})

const script = `import { shout } from "env:mine"
import { echo } from "env:files"

export default async function () {
  const loud = await shout({ text: "hello" })
  const echoed = await echo({ text: "from a script" })
  let refused = ""
  try { await shout({ text: 42 }) } catch (error) { refused = String(error.message) }
  return { loud: loud.shouted, echoed, refused }
}
`

const call = (name: string, args: unknown) => ({ toolCalls: [{ name, arguments: args }] })

/**
 * Runs agent `worker` of the project at `root`, on a scripted model taking `steps`, to its end:
 * each tool call's result (or failure) as text, in order.
 */
const toolResultsOf = (root: string, steps: Parameters<typeof Scripted.make>[0]) =>
  Effect.gen(function*() {
    const server = yield* startServer(root, { model: Scripted.make(steps) })
    const started = yield* http(`${server.url}/api/runs`, { body: { agent: "worker", message: "go" } })
    const runId = (started.json as { runId: string }).runId
    expect((yield* waitForRun(server.url, runId)).status).toBe("completed")
    const events = (yield* http(`${server.url}/api/runs/${runId}/events`)).json as ReadonlyArray<{ type: string; data: { output?: unknown; error?: unknown } }>
    return events
      .filter((event) => event.type === "tool.call.completed" || event.type === "tool.call.failed")
      .map((event) => String(event.data.output ?? event.data.error))
  })

describe("tools from scripts", () => {
  it.scopedLive("a script calls a Foundry tool and an MCP server's tool as async functions", () =>
    Effect.gen(function*() {
      const log = join(mkdtempSync(join(tmpdir(), "foundry-mcp-log-")), "fixture.log")
      const root = yield* tempProject(files(log))
      const results = yield* toolResultsOf(root, [
        call("read_file", { path: "/std/files/index.d.ts" }),
        call("write_file", { path: "/scripts/tools.js", content: script }),
        call("run_script", { path: "/scripts/tools.js" }),
        { text: "done" }
      ])
      expect(results[0]).toContain("export function echo(input: { \"text\": string }): Promise<string>")
      expect(results[0]).toContain("export function dotted_name(")
      expect(results[2]).toContain("\"loud\": \"HELLO!\"")
      expect(results[2]).toContain("from a script")
      expect(results[2]).toMatch(/invalid arguments for shout[\s\S]*text/)
    }), { timeout: 60_000 })
})

describe("adapters from scripts", () => {
  const adapterFiles = {
    "environments/workspace.ts": `import { defineAdapter, defineEnvironment } from "foundry"

export default defineEnvironment({
  modules: [defineAdapter({
    name: "shout",
    description: "Uppercases text",
    types: "export declare function shout(text: string): string",
    create: () => ({ shout: (text: unknown) => String(text).toUpperCase() })
  })]
})
`,
    "agents/worker/agent.ts": `import { defineAgent } from "foundry"
import workspace from "../../environments/workspace.js"

export default defineAgent({ description: "Scripts against an adapter", model: "demo", environment: workspace })
`
  }
  const forgot = `import { shout } from "env:shout"

export default async function () {
  return { loud: shout("hello"), awaited: await shout("hi") }
}
`

  it.scopedLive("an adapter's README says its functions are awaited, and a result holding one not awaited says so instead of {}", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(adapterFiles)
      const results = yield* toolResultsOf(root, [
        call("read_file", { path: "/std/shout/README.md" }),
        call("write_file", { path: "/scripts/forgot.js", content: forgot }),
        call("run_script", { path: "/scripts/forgot.js" }),
        { text: "done" }
      ])
      expect(results[0]).toContain("returns a Promise: `await` it")
      expect(results[2]).toContain("\"awaited\": \"HI\"")
      expect(results[2]).toContain("\"loud\": \"<a Promise, not its value: await the call that made it>\"")
    }), { timeout: 60_000 })
})

describe("a pure module's types", () => {
  it.scopedLive("/std/<name>/index.d.ts holds the package's own declarations, for a package whose exports do not list its package.json (SheetJS)", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "environments/workspace.ts": `import { defineEnvironment, definePureModule } from "foundry"

export default defineEnvironment({
  modules: [definePureModule({ name: "xlsx", from: "@e965/xlsx", pick: ["read", "write", "utils"] })]
})
`,
        "agents/worker/agent.ts": `import { defineAgent } from "foundry"
import workspace from "../../environments/workspace.js"

export default defineAgent({ description: "Reads the types", model: "demo", environment: workspace })
`
      })
      const [head, found] = yield* toolResultsOf(root, [
        call("read_file", { path: "/std/xlsx/index.d.ts", from: 1, to: 3 }),
        call("grep", { pattern: "sheet_to_json\\(", path: "/std/xlsx" }),
        { text: "done" }
      ])
      expect(head).toContain("scripts may import only: read, write, utils")
      expect(head).not.toContain("export declare const read: unknown")
      expect(found).toContain("/std/xlsx/index.d.ts:")
      expect(found).toContain("sheet_to_json(worksheet: WorkSheet")
    }), { timeout: 60_000 })
})

describe("a tool that asks for approval, from a script", () => {
  it.scopedLive("is not run: the script is told a person must approve it, and a call its policy lets through runs", () =>
    Effect.gen(function*() {
      const log = join(mkdtempSync(join(tmpdir(), "foundry-refund-log-")), "refunds.log")
      const root = yield* tempProject({
        "tools/refund.tool.ts": `import { appendFileSync } from "node:fs"
import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Refund an order",
  input: Schema.Struct({ orderId: Schema.String, cents: Schema.Number }),
  output: Schema.String,
  approval: ({ cents }) => cents > 100,
  run: ({ orderId }) => Effect.sync(() => { appendFileSync(${JSON.stringify(log)}, orderId + "\\n"); return "refunded " + orderId })
})
`,
        "environments/workspace.ts": `import { defineEnvironment, defineTools } from "foundry"
import refund from "../tools/refund.tool.js"

export default defineEnvironment({ modules: [defineTools({ name: "shop", tools: { refund } })] })
`,
        "agents/worker/agent.ts": `import { defineAgent } from "foundry"
import workspace from "../../environments/workspace.js"

export default defineAgent({ description: "Refunds from a script", model: "demo", environment: workspace })
`
      })
      const refunds = `import { refund } from "env:shop"

export default async function () {
  const small = await refund({ orderId: "small", cents: 50 })
  let big = ""
  try { big = await refund({ orderId: "big", cents: 5000 }) } catch (error) { big = "threw: " + error.message }
  return { small, big }
}
`
      const results = yield* toolResultsOf(root, [
        call("write_file", { path: "/scripts/refunds.js", content: refunds }),
        call("run_script", { path: "/scripts/refunds.js" }),
        { text: "done" }
      ])
      expect(results[1]).toContain("\"small\": \"refunded small\"")
      expect(results[1]).toContain("threw: env:shop refund: not run: this call needs a person's approval")
      expect(yield* Effect.promise(() => import("node:fs/promises").then((fs) => fs.readFile(log, "utf8")))).toBe("small\n")
    }), { timeout: 60_000 })
})

describe("the project's permission rules, for tools called from a script", () => {
  it.scopedLive("deny a Foundry tool and an MCP tool by the names the model would call them, and allow lets through a call its approval would ask about", () =>
    Effect.gen(function*() {
      const log = join(mkdtempSync(join(tmpdir(), "foundry-mcp-log-")), "fixture.log")
      const project = files(log)
      const root = yield* tempProject({
        ...project,
        "tools/refund.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Refund an order",
  input: Schema.Struct({ orderId: Schema.String }),
  output: Schema.String,
  approval: "always",
  run: ({ orderId }) => Effect.succeed("refunded " + orderId)
})
`,
        "environments/workspace.ts": project["environments/workspace.ts"]
          .replace(`import shout from "../tools/shout.tool.js"`, `import shout from "../tools/shout.tool.js"\nimport refund from "../tools/refund.tool.js"`)
          .replace("tools: { shout }", "tools: { loud: shout, refund }"),
        "foundry.config.ts": `import { defineConfig } from "foundry"

export default defineConfig({
  permissions: [
    { tool: "shout", action: "deny", reason: "no shouting" },
    { tool: "files__echo", action: "deny", reason: "no echoes" },
    { tool: "refund", action: "allow" }
  ]
})
`
      })
      const script = `import { loud, refund } from "env:mine"
import { echo } from "env:files"

const attempt = async (call) => { try { return await call() } catch (error) { return "threw: " + error.message } }

export default async function () {
  return {
    loud: await attempt(() => loud({ text: "hi" })),
    echo: await attempt(() => echo({ text: "hi" })),
    refund: await attempt(() => refund({ orderId: "7" }))
  }
}
`
      const results = yield* toolResultsOf(root, [
        call("write_file", { path: "/scripts/rules.js", content: script }),
        call("run_script", { path: "/scripts/rules.js" }),
        { text: "done" }
      ])
      expect(results[1]).toContain("\"loud\": \"threw: env:mine loud: denied by the project's permission rules: no shouting\"")
      expect(results[1]).toContain("\"echo\": \"threw: env:files echo: denied by the project's permission rules: no echoes\"")
      expect(results[1]).toContain("\"refund\": \"refunded 7\"")
    }), { timeout: 60_000 })
})
