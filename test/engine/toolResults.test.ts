/**
 * What a tool gives back that is not plain data: nothing at all (a `Schema.Void` tool), a value
 * with no JSON form (a bigint, a cycle), a failure that is no error, an Effect that interrupts
 * itself. Each is a result the model reads, and the run goes on.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Scripted from "../../src/models/scripted.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const tool = (name: string, output: string, run: string) => `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "The ${name} tool",
  input: Schema.Struct({}),
  output: ${output},
  run: () => ${run}
})
`

const names = ["notify", "big", "cycle", "quits", "refuses"] as const

const project = {
  "agents/worker/agent.ts": `import { defineAgent } from "foundry"
${names.map((name) => `import ${name} from "./tools/${name}.tool.js"`).join("\n")}

export default defineAgent({ description: "Calls odd tools", tools: [${names.join(", ")}], maxTurns: 3 })
`,
  "foundry.config.ts": `import { defineConfig } from "foundry"
export default defineConfig({ maxToolFailures: 10 })
`,
  "agents/worker/tools/notify.tool.ts": tool("notify", "Schema.Void", "Effect.void"),
  "agents/worker/tools/big.tool.ts": tool("big", "Schema.Unknown", "Effect.succeed({ n: 10n })"),
  "agents/worker/tools/cycle.tool.ts": tool("cycle", "Schema.Unknown", "Effect.sync(() => { const a: Record<string, unknown> = {}; a.self = a; return a })"),
  "agents/worker/tools/quits.tool.ts": tool("quits", "Schema.String", "Effect.interrupt"),
  "agents/worker/tools/refuses.tool.ts": tool("refuses", "Schema.String", "Effect.fail({ code: 42 })")
}

/** Calls every tool in its first turn, then answers with what each gave back, one per line. */
const model = Scripted.make((request, index) => {
  if (index === 0) return { toolCalls: names.map((name) => ({ name, arguments: {} })) }
  return { text: request.messages.flatMap((m) => m._tag === "tool" ? [`${m.name}: ${m.content}`] : []).join("\n") }
})

describe("tool results that are not plain data", () => {
  it.scopedLive("nothing, a bigint, a cycle, a self-interrupting Effect and a failure that is no error each become a result; the run goes on", () =>
    Effect.gen(function*() {
      const { url } = yield* startServer(yield* tempProject(project), { model })
      const created = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: "go" } })
      const { runId } = created.json as { runId: string }
      const run = yield* waitForRun(url, runId)
      expect(run.status, JSON.stringify(run)).toBe("completed")
      const results = new Map((run.output ?? "").split("\n").map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 2)]))
      expect(results.get("notify")).toBe("(no output)")
      expect(results.get("big")).toContain("Error: big returned a value that cannot be written as JSON (Do not know how to serialize a BigInt)")
      expect(results.get("cycle")).toContain("Error: cycle returned a value that cannot be written as JSON (Converting circular structure to JSON")
      expect(results.get("quits")).toBe("Error: quits failed: its Effect was interrupted before it returned a result")
      expect(results.get("refuses")).toBe(`Error: refuses failed: {"code":42}`)

      const events = (yield* http(`${url}/api/runs/${runId}/events`)).json as ReadonlyArray<{ type: string; data: Record<string, unknown> }>
      expect(events.find((e) => e.type === "tool.call.completed" && e.data.tool === "notify")?.data.output).toBeNull()
      expect(events.filter((e) => e.type === "tool.call.failed").map((e) => e.data.tool).sort()).toEqual(["big", "cycle", "quits", "refuses"])
    }))
})
