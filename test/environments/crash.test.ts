/**
 * A server killed with SIGKILL while a script runs in an environment: after a restart the tree is
 * as of the last recorded step (what the script had written is gone), the script runs again and
 * its change lands once, the run completes, and undo in the restarted process restores the
 * version before the script.
 */
import { existsSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { serveProject } from "../support/cli.js"
import { http, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

interface EventBody {
  readonly type: string
  readonly data: { readonly tool?: string; readonly output?: unknown; readonly error?: unknown }
}

const eventsOf = (url: string, runId: string) =>
  Effect.map(http(`${url}/api/runs/${runId}/events`), (r) => r.json as ReadonlyArray<EventBody>)


const project = (marker: string, paused: string) => ({
  "environments/workspace.ts": `import { defineEnvironment, defineTools } from "foundry"
import pause from "../tools/pause.tool.js"

export default defineEnvironment({
  modules: [defineTools({ name: "host", tools: { pause } })],
  limits: { scriptTimeoutMs: 120000 }
})
`,
  "tools/pause.tool.ts": `import { existsSync, writeFileSync } from "node:fs"
import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

// Holds the script while the marker exists (the first process), so that it can be killed mid-script.
export default defineTool({
  description: "Pause while the test wants the script held",
  input: Schema.Struct({}),
  output: Schema.String,
  run: () => Effect.gen(function*() {
    writeFileSync(${JSON.stringify(paused)}, "")
    while (existsSync(${JSON.stringify(marker)})) yield* Effect.sleep("50 millis")
    return "resumed"
  })
})
`,
  "agents/writer/agent.ts": `import { defineAgent, Scripted } from "foundry"
import workspace from "../../environments/workspace.js"

const script = [
  'import { exists, readText, writeFile } from "env:fs"',
  'import { pause } from "env:host"',
  'export default async function () {',
  '  const before = (await exists("/out/log.txt")) ? await readText("/out/log.txt") : ""',
  '  await writeFile("/out/log.txt", before + "ran\\\\n")',
  '  await pause({})',
  '  return "finished"',
  '}'
].join("\\n")

const call = (name: string, args: unknown) => ({ toolCalls: [{ name, arguments: args }] })

export default defineAgent({
  description: "Writes, scripts, reads and undoes",
  environment: workspace,
  maxTurns: 12,
  model: Scripted.make([
    call("write_file", { path: "/out/a.txt", content: "first" }),
    call("write_file", { path: "/scripts/slow.js", content: script }),
    call("run_script", { path: "/scripts/slow.js" }),
    call("read_file", { path: "/out/log.txt" }),
    call("undo", {}),
    call("ls", { path: "/out" }),
    { text: "done" }
  ])
})
`
})

describe("an environment across a crash", () => {
  it.scopedLive("a SIGKILL during run_script: the tree is as of the last recorded step, the script lands once, undo works after the restart", () =>
    Effect.gen(function*() {
      const marker = join(tmpdir(), `foundry-env-hold-${randomUUID()}`)
      const paused = `${marker}.paused`
      writeFileSync(marker, "")
      const root = yield* tempProject(project(marker, paused))
      const first = yield* serveProject(root)
      const started = yield* http(`${first.url}/api/runs`, { body: { agent: "writer", message: "go" } })
      const runId = (started.json as { runId: string }).runId

      // Killed with the script half done: it has written /out/log.txt in its working copy and waits.
      for (let attempt = 0; attempt < 400 && !existsSync(paused); attempt++) yield* Effect.sleep("25 millis")
      expect(existsSync(paused)).toBe(true)
      first.server.child.kill("SIGKILL")
      yield* Effect.async<void>((resume) => {
        first.server.child.once("exit", () => resume(Effect.void))
      })
      rmSync(marker)

      const second = yield* serveProject(root)
      const run = yield* waitForRun(second.url, runId)
      expect(run.status).toBe("completed")
      const results = (yield* eventsOf(second.url, runId))
        .filter((event) => event.type === "tool.call.completed" || event.type === "tool.call.failed")
        .map((event) => `${event.data.tool}: ${String(event.data.output ?? event.data.error)}`)
      // The two writes were recorded before the kill and not applied again; the script ran twice, its change landed once.
      expect(results.filter((result) => result.startsWith("write_file"))).toHaveLength(2)
      expect(results.find((result) => result.startsWith("run_script"))).toContain("finished")
      const read = results.find((result) => result.startsWith("read_file")) ?? ""
      expect(read.match(/ran/g)).toHaveLength(1)
      // undo in the restarted process takes back the script's change: /out holds a.txt alone.
      expect(results.find((result) => result.startsWith("undo"))).toContain("version 2")
      const listed = results.find((result) => result.startsWith("ls")) ?? ""
      expect(listed).toContain("/out/a.txt")
      expect(listed).not.toContain("log.txt")
      rmSync(paused, { force: true })
    }), { timeout: 120_000 })
})
