import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { freePort, runCli, startCli } from "../support/cli.js"
import { http, waitForRun } from "../support/server.js"

const scratchFolder = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "foundry-init-"))),
  (folder) => Effect.sync(() => rmSync(folder, { recursive: true, force: true }))
)

const ask = (url: string, message: string) =>
  Effect.gen(function*() {
    const created = yield* http(`${url}/api/runs`, { body: { agent: "assistant", message } })
    expect(created.status).toBe(202)
    return (yield* waitForRun(url, (created.json as { runId: string }).runId)) as { status: string; output?: string }
  })

describe("foundry init and foundry dev", () => {
  it.scopedLive("init makes a project outside the repository that dev serves at once and reloads on every edit", () =>
    Effect.gen(function*() {
      const folder = yield* scratchFolder
      const project = join(folder, "my-agents")
      const created = yield* runCli(["init", project])
      expect(created.code).toBe(0)
      expect(existsSync(join(project, "agents/assistant/agent.ts"))).toBe(true)
      expect(existsSync(join(project, "node_modules"))).toBe(false)
      // Every route folder is type-checked in the editor as `foundry check` checks it, mcp/ among them.
      expect(JSON.parse(readFileSync(join(project, "tsconfig.json"), "utf8")).include).toEqual(expect.arrayContaining(["agents", "tools", "mcp", "playbooks", "schedules", "environments"]))

      const port = yield* freePort
      const dev = yield* startCli(["dev", project, "--port", String(port)])
      yield* dev.waitFor(/listening on http:\/\/127\.0\.0\.1:\d+/)
      const url = `http://127.0.0.1:${port}`
      expect(existsSync(join(project, ".foundry/manifest.json"))).toBe(true)
      // Its agent asks for the demo model: no word of a key it does not need.
      expect(dev.output()).not.toContain("OPENAI_API_KEY")

      const first = yield* ask(url, `count the words in "hello brave new world"`)
      expect(first).toMatchObject({ status: "completed" })
      expect(first.output).toContain(`{"words":4}`)

      // Editing a tool changes behaviour without a restart.
      const toolFile = join(project, "agents/assistant/tools/word-count.tool.ts")
      const original = readFileSync(toolFile, "utf8")
      let mark = dev.output().length
      writeFileSync(toolFile, original.replace(".length })", ".length * 10 })"))
      yield* dev.waitFor(/reloaded \(build \d+\)/, mark)
      const second = yield* ask(url, `count the words in "hello brave new world"`)
      expect(second.output).toContain(`{"words":40}`)

      // Breaking it reports the file and keeps the last good build serving.
      mark = dev.output().length
      writeFileSync(toolFile, "import { defineTool } from \"foundry\"\nexport default defineTool({ description: \n")
      const failure = yield* dev.waitFor(/Reload failed[\s\S]*word-count\.tool\.ts[^\n]*/, mark)
      expect(failure).toContain("agents/assistant/tools/word-count.tool.ts")
      const third = yield* ask(url, `count the words in "hello brave new world"`)
      expect(third.output).toContain(`{"words":40}`)

      // Fixing it again is picked up.
      mark = dev.output().length
      writeFileSync(toolFile, original)
      yield* dev.waitFor(/reloaded \(build \d+\)/, mark)
      const fourth = yield* ask(url, `count the words in "one two"`)
      expect(fourth.output).toContain(`{"words":2}`)
    }))

  it.scopedLive("without an API key, dev names the agents that ask for openai:* and run on the demo model instead", () =>
    Effect.gen(function*() {
      const folder = yield* scratchFolder
      const project = join(folder, "p")
      yield* runCli(["init", project])
      const agentFile = join(project, "agents/assistant/agent.ts")
      writeFileSync(agentFile, readFileSync(agentFile, "utf8").replace(`model: "demo"`, `model: "openai:gpt-4.1-mini"`))
      const port = yield* freePort
      const dev = yield* startCli(["dev", project, "--port", String(port)])
      const banner = yield* dev.waitFor(/note: [^\n]*/)
      expect(banner).toContain("OPENAI_API_KEY is not set: agents that ask for openai:* run on the offline demo model (here: assistant)")
    }))

  it.scopedLive("editing and deleting a schedule file while dev runs updates and cancels its activation", () =>
    Effect.gen(function*() {
      const folder = yield* scratchFolder
      const project = join(folder, "p")
      yield* runCli(["init", project])
      const schedule = (every: string) => `import { defineSchedule } from "foundry"
import assistant from "../agents/assistant/agent.js"
export default defineSchedule({ agent: assistant, every: "${every}", message: "check in" })
`
      const port = yield* freePort
      const dev = yield* startCli(["dev", project, "--port", String(port)])
      yield* dev.waitFor(/listening on/)
      const url = `http://127.0.0.1:${port}`
      const schedules = () => Effect.map(http(`${url}/api/schedules`), (r) => r.json as Array<{ id: string; timing: { every?: string } }>)
      expect(yield* schedules()).toEqual([])

      let mark = dev.output().length
      mkdirSync(join(project, "schedules"), { recursive: true })
      writeFileSync(join(project, "schedules/check-in.ts"), schedule("1 hour"))
      yield* dev.waitFor(/reloaded \(build \d+\): [^\n]*1 schedule/, mark)
      expect((yield* schedules()).map((s) => `${s.id} ${s.timing.every}`)).toEqual(["check-in 1 hour"])

      mark = dev.output().length
      writeFileSync(join(project, "schedules/check-in.ts"), schedule("2 hours"))
      yield* dev.waitFor(/reloaded \(build \d+\)/, mark)
      expect((yield* schedules()).map((s) => `${s.id} ${s.timing.every}`)).toEqual(["check-in 2 hours"])

      mark = dev.output().length
      rmSync(join(project, "schedules/check-in.ts"))
      yield* dev.waitFor(/reloaded \(build \d+\): [^\n]*0 schedules/, mark)
      expect(yield* schedules()).toEqual([])
    }))

  it.scopedLive("init's next command can be pasted into a shell when the folder's name has spaces and quotes", () =>
    Effect.gen(function*() {
      const folder = yield* scratchFolder
      const project = join(folder, "Bob's agents")
      const created = yield* runCli(["init", project])
      expect(created.code).toBe(0)
      const next = created.stdout.split("\n").find((line) => line.startsWith("next: "))?.slice("next: ".length) ?? ""
      // What a shell makes of the line's last word: the folder, whole.
      const echoed = execFileSync("sh", ["-c", `set -- ${next.slice("foundry dev ".length)}; printf %s "$1"`], { encoding: "utf8" })
      expect(echoed).toBe(project)
    }))

  it.scopedLive("init refuses a folder that is not empty", () =>
    Effect.gen(function*() {
      const folder = yield* scratchFolder
      writeFileSync(join(folder, "notes.txt"), "mine")
      const result = yield* runCli(["init", folder])
      expect(result.code).toBe(1)
      expect(result.stderr).toContain("is not empty")
      expect(readFileSync(join(folder, "notes.txt"), "utf8")).toBe("mine")
    }))

  it.scopedLive("dev on IPv6 loopback prints an address a browser opens (the host in brackets)", () =>
    Effect.gen(function*() {
      const folder = yield* scratchFolder
      const project = join(folder, "p")
      yield* runCli(["init", project])
      const port = yield* freePort
      const dev = yield* startCli(["dev", project, "--host", "::1", "--port", String(port)])
      yield* dev.waitFor(new RegExp(`listening on http://\\[::1\\]:${port}\\b`))
      expect((yield* http(`http://[::1]:${port}/health`)).status).toBe(200)
    }))

  it.scopedLive("dev refuses to bind beyond loopback without auth", () =>
    Effect.gen(function*() {
      const folder = yield* scratchFolder
      const project = join(folder, "p")
      yield* runCli(["init", project])
      const result = yield* runCli(["start", project, "--host", "0.0.0.0", "--port", "0"])
      expect(result.code).toBe(1)
      expect(result.stderr).toContain("refusing to listen on 0.0.0.0")
    }))
})
