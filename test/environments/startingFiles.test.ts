/**
 * Version 0 of an instance's tree is the files it started with, kept when it first changed: the
 * environment definition's `files` edited while `foundry dev` runs reach new instances only, and
 * an older instance's v0 (read over HTTP, restored by `undo({ version: 0 })`) stays its own.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { freePort, startCli } from "../support/cli.js"
import { http, toolResults, waitForRun } from "../support/server.js"
import { tempProject, writeFiles } from "../support/tempProject.js"

const environmentFile = (rates: string) => `import { defineEnvironment } from "foundry"

export default defineEnvironment({
  description: "A workspace for reports",
  files: { "/inbox/reference/rates.md": ${JSON.stringify(rates)} },
  readOnlyPaths: ["/inbox/reference"]
})
`

// The model, in the agent's file: "write" writes a note, "restore" goes back to version 0 and looks.
const agentFile = `import { defineAgent, Scripted } from "foundry"
import workspace from "../../environments/workspace.js"

const call = (name, args) => ({ toolCalls: [{ name, arguments: args }] })

export default defineAgent({
  description: "Writes reports",
  environment: workspace,
  model: Scripted.make((request, index) => {
    const message = request.messages.find((entry) => entry._tag === "user")
    const turns = message?.content === "write"
      ? [call("write_file", { path: "/out/notes.txt", content: "one" })]
      : [call("undo", { version: 0 }), call("read_file", { path: "/inbox/reference/rates.md" }), call("ls", { path: "/", recursive: true })]
    return turns[index] ?? { text: "done" }
  })
})
`

const run = (base: string, instance: string, message: string) =>
  Effect.gen(function*() {
    const response = yield* http(`${base}/api/runs`, { body: { agent: "reports", instance, message } })
    expect(response.status).toBe(202)
    const { runId } = response.json as { runId: string }
    expect((yield* waitForRun(base, runId)).status).toBe("completed")
    return runId
  })

describe("the files an instance started with", () => {
  it.scopedLive("stay its version 0 after the definition's files change: read over HTTP, and restored by undo({ version: 0 })", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "environments/workspace.ts": environmentFile("Rates are fixed.\n"), "agents/reports/agent.ts": agentFile })
      const port = yield* freePort
      const dev = yield* startCli(["dev", root, "--port", String(port)])
      yield* dev.waitFor(/listening on http:\/\/127\.0\.0\.1:\d+/)
      const url = `http://127.0.0.1:${port}`
      yield* run(url, "acme", "write")

      const mark = dev.output().length
      writeFiles(root, { "environments/workspace.ts": environmentFile("Rates went up.\n") })
      yield* dev.waitFor(/reloaded \(build \d+\)/, mark)

      const rates = (instance: string) =>
        Effect.promise(() => fetch(`${url}/api/instances/${instance}/environment/file?agent=reports&path=/inbox/reference/rates.md&version=0`).then((response) => response.text()))
      expect(yield* rates("acme")).toBe("Rates are fixed.\n")
      const listed = yield* http(`${url}/api/instances/acme/environment?agent=reports&version=0`)
      expect(listed.json).toMatchObject({ version: 0, head: 1, files: [{ path: "/inbox/reference/rates.md", size: 17 }] })

      const restored = yield* toolResults(url, yield* run(url, "acme", "restore"))
      expect(restored[0]).toContain("the files are as at version 0")
      expect(restored[1]).toContain("Rates are fixed.")
      expect(restored[2]).not.toContain("/out/notes.txt")

      // A new instance starts from the definition as it is now.
      expect((yield* http(`${url}/api/instances`, { body: { agent: "reports", id: "bcme" } })).status).toBe(201)
      expect(yield* rates("bcme")).toBe("Rates went up.\n")
    }), { timeout: 60_000 })
})
