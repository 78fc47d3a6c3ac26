/**
 * Tool limits: a call that outlasts its timeout is stopped and reported to the model as a failed
 * call; a result longer than `toolOutputLimit` is cut in what the model sees, never in events.
 */
import { randomUUID } from "node:crypto"
import { readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { truncateForModel } from "../../src/engine/executeTool.js"
import type { ModelRequest } from "../../src/models/Model.js"
import * as Scripted from "../../src/models/scripted.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

interface EventView {
  readonly type: string
  readonly data: Record<string, unknown>
}

const report = "0123456789".repeat(2_000)

/** A file each stopped call of `slow` and `sluggish` writes its name to, as it is interrupted. */
const stoppedLog = () => join(tmpdir(), `foundry-stopped-${randomUUID()}.log`)

const project = (config: string, stopped = stoppedLog()) => ({
  "agents/worker/agent.ts": `import { defineAgent } from "foundry"
import big from "./tools/big.tool.js"
import slow from "./tools/slow.tool.js"
import sluggish from "./tools/sluggish.tool.js"
import brief from "./tools/brief.tool.js"

export default defineAgent({ description: "Works with limits", tools: [big, slow, sluggish, brief], maxTurns: 5 })
`,
  "agents/worker/tools/brief.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Work for a tenth of a second",
  input: Schema.Struct({}),
  output: Schema.String,
  run: () => Effect.as(Effect.sleep("100 millis"), "finished")
})
`,
  // Slow with its own timeout; sluggish with the config's.
  "agents/worker/tools/slow.tool.ts": `import { appendFileSync } from "node:fs"
import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Work for ten seconds",
  input: Schema.Struct({}),
  output: Schema.String,
  timeout: "50 millis",
  run: () => Effect.as(Effect.sleep("10 seconds"), "finished").pipe(
    Effect.onInterrupt(() => Effect.sync(() => appendFileSync(${JSON.stringify(stopped)}, "slow\\n")))
  )
})
`,
  "agents/worker/tools/sluggish.tool.ts": `import { appendFileSync } from "node:fs"
import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Work for ten seconds, without a timeout of its own",
  input: Schema.Struct({}),
  output: Schema.String,
  run: () => Effect.as(Effect.sleep("10 seconds"), "finished").pipe(
    Effect.onInterrupt(() => Effect.sync(() => appendFileSync(${JSON.stringify(stopped)}, "sluggish\\n")))
  )
})
`,
  "agents/worker/tools/big.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Produce a long report",
  input: Schema.Struct({}),
  output: Schema.Struct({ secret: Schema.String, report: Schema.String }),
  redact: ["secret"],
  run: () => Effect.succeed({ secret: "hunter2", report: ${JSON.stringify(report)} })
})
`,
  "foundry.config.ts": `import { defineConfig } from "foundry"
export default defineConfig(${config})
`
})

const toolResults = (request: ModelRequest): ReadonlyArray<string> =>
  request.messages.flatMap((m) => m._tag === "tool" ? [m.content] : [])

/** A model that makes `calls` in its first turn, then answers `text`; `seen` gets the tool results it was shown. */
const callingOnce = (calls: ReadonlyArray<{ readonly name: string; readonly arguments: unknown }>, text: string) => {
  const seen: Array<string> = []
  const model = Scripted.make((request, index) => {
    if (index === 0) return { toolCalls: calls }
    seen.push(...toolResults(request))
    return { text }
  })
  return { model, seen }
}

const runOn = (url: string) =>
  Effect.gen(function*() {
    const created = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: "go" } })
    expect(created.status).toBe(202)
    const { runId } = created.json as { runId: string }
    const run = yield* waitForRun(url, runId)
    const events = (yield* http(`${url}/api/runs/${runId}/events`)).json as ReadonlyArray<EventView>
    return { run, events }
  })

describe("tool limits", () => {
  it.scopedLive("a call that outlasts its timeout is stopped, and the model reads that it timed out", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const stopped = stoppedLog()
      const stoppedWhenAnswered: Array<string> = []
      const model = Scripted.make((request, index) => {
        if (index === 0) return { toolCalls: [{ name: "slow", arguments: {} }, { name: "sluggish", arguments: {} }] }
        seen.push(...toolResults(request))
        stoppedWhenAnswered.push(...readFileSync(stopped, "utf8").split("\n").filter((l) => l !== ""))
        return { text: "both were too slow" }
      })
      const root = yield* tempProject(project(`{ toolTimeout: "80 millis" }`, stopped))
      const server = yield* startServer(root, { model })
      const { events, run } = yield* runOn(server.url)
      // Interrupted as its time ran out, not left running until the run ends: by the time the
      // model reads that they timed out, each call wrote that it was stopped.
      expect(stoppedWhenAnswered).toEqual(["slow", "sluggish"])
      expect(run).toMatchObject({ status: "completed", output: "both were too slow" })
      expect(seen).toEqual([
        "Error: slow timed out after 50 millis (the tool's timeout) and was interrupted; what it had already begun (a request sent) may still take effect: check before calling it again",
        "Error: sluggish timed out after 80 millis (the config's toolTimeout) and was interrupted; what it had already begun (a request sent) may still take effect: check before calling it again"
      ])
      const failed = events.filter((e) => e.type === "tool.call.failed")
      expect(failed.map((e) => e.data.tool)).toEqual(["slow", "sluggish"])
      expect(failed.map((e) => String(e.data.error))).toEqual([
        expect.stringContaining("timed out after 50 millis"),
        expect.stringContaining("timed out after 80 millis")
      ])
      // Stopped, not waited for: the tools would have run ten seconds.
      for (const event of failed) expect(Number(event.data.durationMs)).toBeLessThan(2_000)
    }))

  it.scopedLive("a time limit longer than a timer holds (30 days) is no limit: the call is not stopped at once", () =>
    Effect.gen(function*() {
      const { model, seen } = callingOnce([{ name: "brief", arguments: {} }], "done")
      const server = yield* startServer(yield* tempProject(project(`{ toolTimeout: "30 days" }`)), { model })
      const { run } = yield* runOn(server.url)
      expect(run).toMatchObject({ status: "completed" })
      expect(seen).toEqual(["finished"])
    }))

  it.scopedLive("a timed-out call counts as a failure for maxToolFailures", () =>
    Effect.gen(function*() {
      const model = Scripted.make(() => ({ toolCalls: [{ name: "slow", arguments: {} }] }))
      const server = yield* startServer(yield* tempProject(project(`{ maxToolFailures: 2 }`)), { model })
      const { run } = yield* runOn(server.url)
      expect(run.status).toBe("failed")
      expect(run.error).toContain("2 tool calls failed in a row")
      expect(run.error).toContain("slow timed out after 50 millis")
    }))

  it.scopedLive("a call the run's failure leaves open says how long it waited: from its turn's answer until then", () =>
    Effect.gen(function*() {
      // A tenth of a second of work, then a call that times out: the run fails with the third call not made.
      const model = Scripted.make(() => ({
        toolCalls: [{ name: "brief", arguments: {} }, { name: "slow", arguments: {} }, { name: "brief", arguments: {} }]
      }))
      const server = yield* startServer(yield* tempProject(project(`{ maxToolFailures: 1 }`)), { model })
      const { events, run } = yield* runOn(server.url)
      expect(run.status).toBe("failed")
      const unmade = events.filter((e) => e.type === "tool.call.failed" && String(e.data.error).startsWith("no result"))
      expect(unmade).toHaveLength(1)
      expect(unmade[0]?.data.durationMs).toBeGreaterThanOrEqual(140)
    }))

  it.scopedLive("a result over toolOutputLimit is cut for the model with a note; the event keeps all of it, redacted", () =>
    Effect.gen(function*() {
      const { model, seen } = callingOnce([{ name: "big", arguments: {} }], "read the start of it")
      const server = yield* startServer(yield* tempProject(project(`{ toolOutputLimit: 1000 }`)), { model })
      const { events, run } = yield* runOn(server.url)
      expect(run).toMatchObject({ status: "completed" })
      const full = JSON.stringify({ secret: "hunter2", report })
      expect(seen).toHaveLength(1)
      expect(seen[0]).toBe(
        `${full.slice(0, 1000)}\n[output truncated: ${full.length - 1000} of ${full.length} characters cut (toolOutputLimit is 1000)]`
      )
      const completed = events.find((e) => e.type === "tool.call.completed")
      expect(completed?.data.output).toEqual({ secret: "[redacted]", report })
    }))

  it("a cut never splits a character made of two UTF-16 units", () => {
    const cut = truncateForModel("ab😀cd", 3, "(toolOutputLimit is 3)")
    expect(cut.startsWith("ab\n")).toBe(true)
    expect(cut).toContain("4 of 6 characters cut")
    expect(truncateForModel("short", 5, "(toolOutputLimit is 5)")).toBe("short")
  })
})
