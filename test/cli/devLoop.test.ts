/**
 * The dev loop end to end: the real `foundry dev` process on temporary projects, edited the way
 * editors and tools edit files (atomic saves by rename, helper files, broken files, a broken
 * config), and a cold start that must take its port and store from the config.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { browserPage, skipBrowser } from "../support/browser.js"
import { type CliProcess, freePort, runCli, serveProject, startCli } from "../support/cli.js"
import { connect, freshSchema, skipPostgres } from "../support/postgres.js"
import { http, pendingApproval, type RunBody, waitForRun } from "../support/server.js"
import { answeringAgentFile as agentSource, answerToolFile as answerTool, tempProject } from "../support/tempProject.js"

/** The tool returning the string `constant`. */
const constantTool = (constant: string) => answerTool(JSON.stringify(constant))

/** A tool file that does not parse. */
const brokenTool = `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
export default defineTool({ description: "half saved",
`

const toolPath = "agents/helper/tools/answer.tool.ts"

/** Replaces `file` the way editors and `sed -i` do: a new file in the same folder, renamed over it. */
const atomicSave = (file: string, content: string, attempt: number) => {
  const temporary = join(file, "..", `sed${process.pid}x${attempt}`)
  writeFileSync(temporary, content)
  renameSync(temporary, file)
}

/** Starts a run of the helper agent and waits for its end. */
const runHelper = (url: string) =>
  Effect.gen(function*() {
    const created = yield* http(`${url}/api/runs`, { body: { agent: "helper", message: "what is the answer?" } })
    expect(created.status, created.text).toBe(202)
    const runId = (created.json as { runId: string }).runId
    const run: RunBody = yield* waitForRun(url, runId)
    const events = yield* http(`${url}/api/runs/${runId}/events`)
    const toolOutputs = (events.json as ReadonlyArray<{ type: string; data: { tool?: string; output?: unknown } }>)
      .filter((e) => e.type === "tool.call.completed")
      .map((e) => e.data.output)
    return { runId, run, toolOutputs }
  })

/** Asserts that a run of the helper agent used the tool returning `constant`. */
const expectAnswer = (url: string, constant: string) =>
  Effect.gen(function*() {
    const { run, runId, toolOutputs } = yield* runHelper(url)
    expect(run.status, JSON.stringify(run)).toBe("completed")
    expect(toolOutputs).toEqual([constant])
    expect(run.output).toBe(`the tool said: ${constant}`)
    return runId
  })

/** Starts `foundry dev` on `root` with `--port` and waits until it listens. */
const devOn = (root: string) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const dev = yield* startCli(["dev", root, "--port", String(port)])
    yield* dev.waitFor(/listening on http:\/\/127\.0\.0\.1:\d+/)
    return { dev, url: `http://127.0.0.1:${port}` }
  })

/** The number of the build a "reloaded" line after `mark` announces. */
const reloadedBuild = (dev: CliProcess, mark: number) =>
  Effect.map(dev.waitFor(/reloaded \(build (\d+)\)/, mark), (line) => Number(/\d+/.exec(line)?.[0]))

const scratchFolder = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "foundry-empty-"))),
  (folder) => Effect.sync(() => rmSync(folder, { recursive: true, force: true }))
)

describe("the foundry dev loop", () => {
  it.scopedLive("reloads five atomic saves (write a temp file, rename it over the tool) in a row", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "agents/helper/agent.ts": agentSource, [toolPath]: constantTool("v0") })
      const { dev, url } = yield* devOn(root)
      yield* expectAnswer(url, "v0")

      let lastBuild = 1
      for (let version = 1; version <= 5; version++) {
        const mark = dev.output().length
        atomicSave(join(root, toolPath), constantTool(`v${version}`), version)
        const build = yield* reloadedBuild(dev, mark)
        expect(build, `save ${version} should be a new build`).toBeGreaterThan(lastBuild)
        lastBuild = build
        // The reload was caused by the tool file itself (a rename over it), not by the temp file.
        expect(dev.output().slice(mark)).toMatch(/changed: [^\n]*agents\/helper\/tools\/answer\.tool\.ts/)
        expect(dev.output().slice(mark)).not.toMatch(/changed: [^\n]*sed\d+x/)
        yield* expectAnswer(url, `v${version}`)
      }
      const report = yield* http(`${url}/api/build`)
      expect(report.json).toMatchObject({ generation: lastBuild, problems: [] })
    }))

  it.scopedLive("a symbolic link to nothing is a problem of its own path, and once its target exists any save builds again", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({})\n`,
        "agents/helper/agent.ts": agentSource,
        [toolPath]: constantTool("v0")
      })
      const { dev, url } = yield* devOn(root)
      // Saved once unchanged, the agent file's content is what a reload read.
      let mark = dev.output().length
      writeFileSync(join(root, "agents/helper/agent.ts"), agentSource)
      const good = yield* reloadedBuild(dev, mark)

      const link = "agents/helper/tools/extra.tool.ts"
      mark = dev.output().length
      symlinkSync("../../../.shared/extra.tool.ts", join(root, link))
      const failure = yield* dev.waitFor(/Reload failed[\s\S]*extra\.tool\.ts: [^\n]*/, mark)
      expect(failure).toContain(`${link}: a symbolic link to ../../../.shared/extra.tool.ts, which does not exist`)
      expect(dev.output().slice(mark)).not.toContain("foundry.config.ts")
      const report = (yield* http(`${url}/api/build`)).json as { generation: number; problems: ReadonlyArray<{ file: string }> }
      expect(report.generation).toBe(good)
      expect(report.problems.map((problem) => problem.file)).toEqual([link])
      yield* expectAnswer(url, "v0")

      // The target, in a folder nobody watches; then a save that changes nothing builds again.
      mkdirSync(join(root, ".shared"))
      writeFileSync(join(root, ".shared/extra.tool.ts"), constantTool("extra"))
      mark = dev.output().length
      writeFileSync(join(root, "agents/helper/agent.ts"), agentSource)
      const fixed = yield* reloadedBuild(dev, mark)
      expect(fixed).toBeGreaterThan(good)
      expect((yield* http(`${url}/api/build`)).json).toMatchObject({ generation: fixed, problems: [] })
      yield* expectAnswer(url, "v0")
    }))

  it.scopedLive("while files are left out, saving one again unchanged builds again: what they lacked may have come meanwhile", () =>
    Effect.gen(function*() {
      const otherTool = "agents/other/tools/answer.tool.ts"
      const root = yield* tempProject({
        "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({})\n`,
        "agents/helper/agent.ts": agentSource,
        [toolPath]: constantTool("v0"),
        "agents/other/agent.ts": agentSource
      })
      // A link to a file not there yet (as a package not installed yet): the other agent is left out.
      mkdirSync(join(root, "agents/other/tools"))
      symlinkSync("../../../.shared/answer.tool.ts", join(root, otherTool))
      const { dev, url } = yield* devOn(root)
      let mark = dev.output().length
      writeFileSync(join(root, "agents/other/agent.ts"), agentSource)
      yield* dev.waitFor(/reloaded \(build \d+, 2 files left out\)/, mark)
      expect((yield* http(`${url}/api/build`)).json).toMatchObject({ partial: true })

      // What the file lacked comes where nobody watches; the same save again, unchanged, builds it.
      mkdirSync(join(root, ".shared"))
      writeFileSync(join(root, ".shared/answer.tool.ts"), constantTool("extra"))
      mark = dev.output().length
      writeFileSync(join(root, "agents/other/agent.ts"), agentSource)
      const whole = yield* reloadedBuild(dev, mark)
      expect((yield* http(`${url}/api/build`)).json).toMatchObject({ generation: whole, partial: false, problems: [] })
      yield* expectAnswer(url, "v0")
    }))

  it.scopedLive("a crash in route code is logged at its source file and line, not the bundle's", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "lib/explode.ts": `// a helper of the tool's\nexport const explode = (): string => {\n  throw new Error("exploded in the helper")\n}\n`,
        "agents/helper/agent.ts": agentSource,
        [toolPath]: answerTool("explode()", `import { explode } from "../../../lib/explode.js"`)
      })
      const { dev, url } = yield* devOn(root)
      const { run } = yield* runHelper(url)
      expect(run.output).toContain("exploded in the helper")
      const crash = yield* dev.waitFor(/at explode \(.*\)/)
      expect(crash).toContain(`${join(root, "lib/explode.ts")}:3:9`)
    }))

  it.scopedLive("reloads when only a helper file that the tool imports changes", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "lib/version.ts": `export const version = "helper-1"\n`,
        "agents/helper/agent.ts": agentSource,
        [toolPath]: answerTool("version", `import { version } from "../../../lib/version.js"`)
      })
      const { dev, url } = yield* devOn(root)
      yield* expectAnswer(url, "helper-1")

      for (const version of ["helper-2", "helper-3"]) {
        const mark = dev.output().length
        writeFileSync(join(root, "lib/version.ts"), `export const version = ${JSON.stringify(version)}\n`)
        yield* reloadedBuild(dev, mark)
        expect(dev.output().slice(mark)).toMatch(/changed: lib\/version\.ts/)
        yield* expectAnswer(url, version)
      }
    }))

  it.scopedLive("keeps serving the last good build while a broken tool file is fixed", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "agents/helper/agent.ts": agentSource, [toolPath]: constantTool("good-1") })
      const { dev, url } = yield* devOn(root)
      yield* expectAnswer(url, "good-1")

      let mark = dev.output().length
      writeFileSync(join(root, toolPath), constantTool("good-2"))
      const good = yield* reloadedBuild(dev, mark)
      yield* expectAnswer(url, "good-2")

      // Broken: the reload fails, names the file, and the last good build still answers.
      mark = dev.output().length
      writeFileSync(join(root, toolPath), brokenTool)
      const failure = yield* dev.waitFor(/Reload failed[\s\S]*answer\.tool\.ts[^\n]*/, mark)
      expect(failure).toContain(toolPath)
      expect(dev.output().slice(mark)).not.toMatch(/reloaded \(build/)
      yield* expectAnswer(url, "good-2")
      const broken = yield* http(`${url}/api/build`)
      expect(broken.status).toBe(200)
      const report = broken.json as { generation: number; problems: ReadonlyArray<{ file: string; problem: string }> }
      expect(report.generation).toBe(good)
      expect(report.problems.map((p) => p.file)).toContain(toolPath)

      // A second, different breakage (a default export that is no tool) is also reported and survived.
      mark = dev.output().length
      writeFileSync(join(root, toolPath), "export default 42\n")
      const wrongExport = yield* dev.waitFor(/Reload failed[\s\S]*answer\.tool\.ts: [^\n]*/, mark)
      expect(wrongExport).toMatch(/agents\/helper\/tools\/answer\.tool\.ts: the default export is not a Foundry definition[^\n]*must export a tool/)
      yield* expectAnswer(url, "good-2")
      expect((yield* http(`${url}/api/build`)).json).toMatchObject({ generation: good })

      // Fixed: the new version serves and the build has no problems any more.
      mark = dev.output().length
      writeFileSync(join(root, toolPath), constantTool("fixed-3"))
      const fixed = yield* reloadedBuild(dev, mark)
      expect(fixed).toBeGreaterThan(good)
      yield* expectAnswer(url, "fixed-3")
      expect((yield* http(`${url}/api/build`)).json).toMatchObject({ generation: fixed, problems: [] })
    }))

  it.scopedLive("at start, serves the routes that build while broken files keep out only themselves and what uses them", () =>
    Effect.gen(function*() {
      const otherTool = "agents/other/tools/answer.tool.ts"
      const thirdTool = "agents/third/tools/answer.tool.ts"
      const root = yield* tempProject({
        "agents/helper/agent.ts": agentSource,
        [toolPath]: constantTool("sound"),
        "agents/other/agent.ts": agentSource,
        [otherTool]: brokenTool,
        "agents/third/agent.ts": agentSource,
        // Loads, but is no tool: the agent that lists it is left out as well, and its schedule with it.
        [thirdTool]: "export default 42\n",
        "schedules/nightly.ts": `import { defineSchedule } from "foundry"
import third from "../agents/third/agent.js"
export default defineSchedule({ agent: third, every: "1 day", message: "what is the answer?" })
`
      })
      const { dev, url } = yield* devOn(root)
      expect(dev.output()).toMatch(/Some route files do not build; serving the routes that do[\s\S]*agents\/other\/tools\/answer\.tool\.ts/)
      expect(dev.output()).toMatch(/routes:\s+1 agent/)
      expect((yield* http(`${url}/health`)).json).toMatchObject({ status: "ok", agents: 1, leftOut: 5 })
      yield* expectAnswer(url, "sound")
      const refused = yield* http(`${url}/api/runs`, { body: { agent: "other", message: "what is the answer?" } })
      expect(refused.status, refused.text).toBe(404)
      expect((yield* http(`${url}/api/schedules`)).json).toEqual([])
      const report = (yield* http(`${url}/api/build`)).json as { partial: boolean; problems: ReadonlyArray<{ file: string; problem: string; fix: string }> }
      expect(report.partial).toBe(true)
      expect(report.problems.map((p) => p.file).sort()).toEqual(
        ["agents/other/agent.ts", otherTool, "agents/third/agent.ts", thirdTool, "schedules/nightly.ts"].sort()
      )
      expect(report.problems.find((p) => p.file === "schedules/nightly.ts")).toMatchObject({
        problem: "not served: it uses agents/third/agent.ts, which does not build",
        fix: "fix agents/third/agent.ts"
      })
      // A schedule that imports a file that does not parse does not load itself.
      expect(report.problems.find((p) => p.file === "agents/other/agent.ts")?.problem).toContain(`${otherTool}:`)

      // One fixed: it serves beside the sound routes while the other stays out.
      let mark = dev.output().length
      writeFileSync(join(root, otherTool), constantTool("other-fixed"))
      yield* dev.waitFor(/reloaded \(build \d+, 3 files left out\)/, mark)
      yield* expectAnswer(url, "sound")
      const other = yield* http(`${url}/api/runs`, { body: { agent: "other", message: "what is the answer?" } })
      expect(other.status, other.text).toBe(202)
      expect((yield* waitForRun(url, (other.json as { runId: string }).runId)).output).toBe("the tool said: other-fixed")
      expect((yield* http(`${url}/api/schedules`)).json).toEqual([])
      expect(((yield* http(`${url}/api/build`)).json as { partial: boolean; problems: ReadonlyArray<{ file: string }> }).problems.map((p) => p.file).sort())
        .toEqual(["agents/third/agent.ts", thirdTool, "schedules/nightly.ts"])

      // All fixed: the whole project serves, and from then on a broken file keeps the last whole build.
      mark = dev.output().length
      writeFileSync(join(root, thirdTool), constantTool("third-fixed"))
      const whole = yield* reloadedBuild(dev, mark)
      const healthy = (yield* http(`${url}/health`)).json
      expect(healthy).toMatchObject({ agents: 3 })
      expect(healthy).not.toHaveProperty("leftOut")
      expect(((yield* http(`${url}/api/schedules`)).json as ReadonlyArray<{ id: string }>).map((s) => s.id)).toEqual(["nightly"])
      expect((yield* http(`${url}/api/build`)).json).toMatchObject({ generation: whole, problems: [], partial: false })
      mark = dev.output().length
      writeFileSync(join(root, otherTool), brokenTool)
      yield* dev.waitFor(/Reload failed; still serving the last good build/, mark)
      expect((yield* http(`${url}/health`)).json).toMatchObject({ agents: 3 })
      expect((yield* http(`${url}/api/build`)).json).toMatchObject({ generation: whole, partial: false })
    }))

  it.scopedLive("a broken foundry.config.ts at cold start exits non-zero, naming the file and the problem", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const notAConfig = yield* tempProject({
        "foundry.config.ts": `export default { server: { port: ${port} } }\n`,
        "agents/helper/agent.ts": agentSource,
        [toolPath]: constantTool("v0")
      })
      const first = yield* runCli(["dev", notAConfig]).pipe(Effect.timeout("30 seconds"), Effect.orDie)
      expect(first.code, first.stdout + first.stderr).not.toBe(0)
      expect(first.code).not.toBeNull()
      expect(first.stderr).toContain("foundry.config.ts")
      expect(first.stderr).toMatch(/foundry\.config\.ts: the default export is not a Foundry definition[^\n]*must export a config/)
      expect(first.stdout + first.stderr).not.toMatch(/listening on/)

      const unparsable = yield* tempProject({
        "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ server: { port: ${port} }\n`,
        "agents/helper/agent.ts": agentSource,
        [toolPath]: constantTool("v0")
      })
      const second = yield* runCli(["dev", unparsable]).pipe(Effect.timeout("30 seconds"), Effect.orDie)
      expect(second.code, second.stdout + second.stderr).not.toBe(0)
      expect(second.code).not.toBeNull()
      expect(second.stderr).toContain("config is broken")
      // The parser's own words and the place: the file, line and column.
      expect(second.stderr).toMatch(/foundry\.config\.ts: importing the file failed: [^\n]*found end of file \(foundry\.config\.ts:\d+:\d+\)/)
      expect(second.stdout + second.stderr).not.toMatch(/listening on/)

      const throwing = yield* tempProject({
        "foundry.config.ts": `import { defineConfig } from "foundry"
if (process.env["FOUNDRY_DEV_LOOP_UNSET"] === undefined) throw new Error("FOUNDRY_DEV_LOOP_UNSET is not set")
export default defineConfig({ server: { port: ${port} } })
`,
        "agents/helper/agent.ts": agentSource,
        [toolPath]: constantTool("v0")
      })
      const third = yield* runCli(["dev", throwing]).pipe(Effect.timeout("30 seconds"), Effect.orDie)
      expect(third.code, third.stdout + third.stderr).not.toBe(0)
      expect(third.code).not.toBeNull()
      expect(third.stderr).toMatch(/foundry\.config\.ts: [^\n]*FOUNDRY_DEV_LOOP_UNSET is not set/)
      expect(third.stdout + third.stderr).not.toMatch(/listening on/)
    }))

  it.scopedLive("while routes are left out, their schedules keep their state without firing, webhooks are not taken, and their agent says why", () =>
    Effect.gen(function*() {
      const otherTool = "agents/other/tools/answer.tool.ts"
      const root = yield* tempProject({
        "agents/helper/agent.ts": agentSource,
        [toolPath]: constantTool("sound"),
        "agents/other/agent.ts": agentSource,
        [otherTool]: constantTool("other"),
        "schedules/often.ts": `import { defineSchedule } from "foundry"
import other from "../agents/other/agent.js"
export default defineSchedule({ agent: other, every: "1 second", message: "what is the answer?" })
`,
        "playbooks/ping.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import helper from "../agents/helper/agent.js"
export default definePlaybook({ on: webhook("ping", Schema.Struct({ n: Schema.Number })), agent: helper, message: () => "what is the answer?" })
`,
        "playbooks/other-ping.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import other from "../agents/other/agent.js"
export default definePlaybook({ on: webhook("ping", Schema.Struct({ n: Schema.Number })), agent: other, message: () => "what is the answer?" })
`
      })
      type ScheduleView = { id: string; lastRunId: string | null }
      const often = (url: string) =>
        Effect.map(http(`${url}/api/schedules`), (r) => (r.json as ReadonlyArray<ScheduleView>).find((s) => s.id === "often"))
      const otherRuns = (url: string) => Effect.map(http(`${url}/api/runs?agent=other&limit=1000`), (r) => (r.json as ReadonlyArray<unknown>).length)
      const first = yield* devOn(root)
      let fired: ScheduleView | undefined
      for (let i = 0; i < 100 && (fired?.lastRunId ?? null) === null; i++) {
        yield* Effect.sleep("100 millis")
        fired = yield* often(first.url)
      }
      expect(fired?.lastRunId).toMatch(/^run_/)
      yield* Effect.async<void>((resume) => {
        first.dev.child.on("close", () => resume(Effect.void))
        first.dev.child.kill("SIGTERM")
      })

      // Started again with the other agent's tool broken: the schedule is left out, not forgotten.
      writeFileSync(join(root, otherTool), "export default 42\n")
      const { dev, url } = yield* devOn(root)
      expect(dev.output()).toMatch(/Some route files do not build/)
      const kept = yield* often(url)
      expect(kept).toBeDefined()
      const before = yield* otherRuns(url)
      yield* Effect.sleep("2500 millis")
      expect(yield* otherRuns(url)).toBe(before)
      expect((yield* often(url))?.lastRunId).toBe(kept?.lastRunId)

      const hook = yield* http(`${url}/hooks/ping`, { body: { n: 1 }, headers: { "x-event-id": "ping-1" } })
      expect(hook.status, hook.text).toBe(503)
      expect(hook.json).toMatchObject({ _tag: "WebhookNotServed", message: expect.stringContaining("playbooks/other-ping.ts") })
      const refused = yield* http(`${url}/api/runs`, { body: { agent: "other", message: "what is the answer?" } })
      expect(refused.status).toBe(404)
      expect(refused.json).toMatchObject({ message: expect.stringContaining(`agent "other" is not served while agents/other/agent.ts does not build`) })

      // Fixed: the schedule fires again, and the same event, sent again, reaches both playbooks.
      const mark = dev.output().length
      writeFileSync(join(root, otherTool), constantTool("other"))
      yield* reloadedBuild(dev, mark)
      for (let i = 0; i < 100 && (yield* otherRuns(url)) === before; i++) yield* Effect.sleep("100 millis")
      expect(yield* otherRuns(url)).toBeGreaterThan(before)
      const delivered = yield* http(`${url}/hooks/ping`, { body: { n: 1 }, headers: { "x-event-id": "ping-1" } })
      expect(delivered.status, delivered.text).toBe(202)
      expect((delivered.json as { runs: ReadonlyArray<{ playbook: string }> }).runs.map((r) => r.playbook).sort()).toEqual(["other-ping", "ping"])
    }))

  it.scopedLive("a run of an agent a restart left out waits for a build with it, and goes on once its file builds again", () =>
    Effect.gen(function*() {
      const askingTool = (constant: string) =>
        constantTool(constant).replace(`description: "Returns the current answer",`, `description: "Returns the current answer", approval: "always",`)
      const root = yield* tempProject({ "agents/helper/agent.ts": agentSource, [toolPath]: askingTool("approved") })
      const first = yield* devOn(root)
      const created = yield* http(`${first.url}/api/runs`, { body: { agent: "helper", message: "what is the answer?" } })
      expect(created.status, created.text).toBe(202)
      const runId = (created.json as { runId: string }).runId
      const approval = yield* pendingApproval(first.url, runId)
      yield* Effect.async<void>((resume) => {
        first.dev.child.on("close", () => resume(Effect.void))
        first.dev.child.kill("SIGTERM")
      })

      // Started again with the tool half saved: the agent is left out, and the decision comes now.
      writeFileSync(join(root, toolPath), brokenTool)
      const { dev, url } = yield* devOn(root)
      expect(dev.output()).toMatch(/Some route files do not build/)
      const decided = yield* http(`${url}/api/approvals/${approval}`, { body: { decision: "approve" } })
      expect(decided.status, decided.text).toBe(200)
      type Event = { type: string; data: { reason?: string; file?: string; problem?: string } }
      const waits = (events: ReadonlyArray<Event>) => events.filter((e) => e.type === "run.suspended" && e.data.reason === "build")
      let events: ReadonlyArray<Event> = []
      for (let i = 0; i < 200 && waits(events).length === 0; i++) {
        yield* Effect.sleep("25 millis")
        events = (yield* http(`${url}/api/runs/${runId}/events`)).json as ReadonlyArray<Event>
      }
      expect(waits(events)).toEqual([
        expect.objectContaining({ data: { reason: "build", file: "agents/helper/agent.ts", problem: expect.stringContaining(toolPath) } })
      ])
      expect(((yield* http(`${url}/api/runs/${runId}`)).json as RunBody).status).toBe("suspended")

      // Another restart, still broken, leaves it waiting: recovery does not wake it only to suspend it again.
      yield* Effect.async<void>((resume) => {
        dev.child.on("close", () => resume(Effect.void))
        dev.child.kill("SIGTERM")
      })
      const again = yield* devOn(root)
      yield* Effect.sleep("500 millis")
      const stillWaiting = (yield* http(`${again.url}/api/runs/${runId}/events`)).json as ReadonlyArray<Event>
      expect(waits(stillWaiting)).toHaveLength(1)
      // The run's page says what it waits for (where a browser is: CI requires one).
      if (!skipBrowser) {
        const page = yield* browserPage
        yield* Effect.promise(() => page.goto(`${again.url}/runs/${runId}`))
        const banner = page.locator("[data-testid=run-waits-for-build]")
        yield* Effect.promise(() => banner.waitFor())
        expect(yield* Effect.promise(() => banner.textContent())).toMatch(/Waits for a build with its agent: agents\/helper\/agent\.ts does not build \(.*answer\.tool\.ts/)
      }

      // Fixed: the reload has the agent, and the approved call runs.
      const mark = again.dev.output().length
      writeFileSync(join(root, toolPath), askingTool("approved"))
      yield* reloadedBuild(again.dev, mark)
      const run = yield* waitForRun(again.url, runId)
      expect(run.status, JSON.stringify(run)).toBe("completed")
      expect(run.output).toBe("the tool said: approved")
    }))

  it.scopedLive("a run queued before a restart left its agent out starts in another process on the same store whose build has it, saying it started", () =>
    Effect.gen(function*() {
      const slowTool = answerTool(`"slow"`).replace(`Effect.succeed("slow")`, `Effect.as(Effect.sleep("60 seconds"), "slow")`)
      const root = yield* tempProject({ "agents/helper/agent.ts": agentSource, [toolPath]: slowTool })
      const first = yield* devOn(root)
      type Event = { type: string; data: { reason?: string } }
      const eventsOf = (url: string, runId: string) => Effect.map(http(`${url}/api/runs/${runId}/events`), (r) => r.json as ReadonlyArray<Event>)
      const untilEvent = (url: string, runId: string, found: (event: Event) => boolean) =>
        Effect.gen(function*() {
          for (let i = 0; i < 200; i++) {
            if ((yield* eventsOf(url, runId)).some(found)) return
            yield* Effect.sleep("25 millis")
          }
          return yield* Effect.die(new Error(`run ${runId} never had the event: ${JSON.stringify(yield* eventsOf(url, runId))}`))
        })
      // The first run holds its conversation in its slow tool, so the second is queued behind it when the server stops.
      const started = (yield* http(`${first.url}/api/runs`, { body: { agent: "helper", message: "first" } })).json as { runId: string; conversationId: string }
      yield* untilEvent(first.url, started.runId, (e) => e.type === "tool.call.started")
      const queued = (yield* http(`${first.url}/api/runs`, { body: { agent: "helper", message: "second", conversation: started.conversationId } })).json as { runId: string }
      expect(((yield* http(`${first.url}/api/runs/${queued.runId}`)).json as RunBody).status).toBe("queued")
      yield* Effect.async<void>((resume) => {
        first.dev.child.on("close", () => resume(Effect.void))
        first.dev.child.kill("SIGTERM")
      })

      // Started again with the tool half saved: both runs wait for a build with their agent, the second without ever having run.
      writeFileSync(join(root, toolPath), brokenTool)
      const partial = yield* devOn(root)
      for (const runId of [started.runId, queued.runId]) yield* untilEvent(partial.url, runId, (e) => e.type === "run.suspended" && e.data.reason === "build")

      // A newer build beside it, on the same store, has the agent: it takes both runs up as it starts.
      const newer = yield* tempProject({
        "agents/helper/agent.ts": agentSource,
        [toolPath]: constantTool("newer"),
        "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ store: { sqlite: ${JSON.stringify(join(root, ".foundry", "foundry.db"))} } })\n`
      })
      const { url } = yield* serveProject(newer)
      const lifecycle = (runId: string) =>
        Effect.map(eventsOf(url, runId), (events) => events.filter((e) => e.type.startsWith("run.")).map((e) => e.type))
      for (const runId of [started.runId, queued.runId]) {
        const run = yield* waitForRun(url, runId)
        expect(run.status, JSON.stringify(run)).toBe("completed")
        expect(run.output).toBe("the tool said: newer")
      }
      // The run that had started goes on; the one that never had starts now.
      expect(yield* lifecycle(started.runId)).toEqual(["run.queued", "run.started", "run.suspended", "run.resumed", "run.completed"])
      expect(yield* lifecycle(queued.runId)).toEqual(["run.queued", "run.suspended", "run.started", "run.completed"])
    }))

  it.scopedLive("two files with one route id are one problem naming both, and the rest of the project serves", () =>
    Effect.gen(function*() {
      const schedule = (every: string) => `import { defineSchedule } from "foundry"
import helper from "../agents/helper/agent.js"
export default defineSchedule({ agent: helper, every: "${every}", message: "what is the answer?" })
`
      const root = yield* tempProject({
        "agents/helper/agent.ts": agentSource,
        [toolPath]: constantTool("sound"),
        "schedules/tick.js": schedule("2 hours"),
        "schedules/tick.ts": schedule("1 hour")
      })
      const { dev, url } = yield* devOn(root)
      expect(dev.output()).not.toContain("foundry.config.ts")
      const report = (yield* http(`${url}/api/build`)).json as { problems: ReadonlyArray<{ file: string; problem: string }> }
      expect(report.problems).toEqual([
        expect.objectContaining({ file: "schedules/tick.ts", problem: `duplicate schedule id "tick": schedules/tick.js has the same id` })
      ])
      yield* expectAnswer(url, "sound")
    }))

  it.scopedLive("a helper that does not parse is named, with its line, in the fix of each file that imports it, and once in the terminal", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "lib/version.ts": `export const version = \n`,
        "agents/helper/agent.ts": agentSource,
        [toolPath]: answerTool("version", `import { version } from "../../../lib/version.js"`)
      })
      const { dev, url } = yield* devOn(root)
      const report = (yield* http(`${url}/api/build`)).json as { problems: ReadonlyArray<{ file: string; fix: string }> }
      expect(report.problems.map((problem) => problem.file).sort()).toEqual(["agents/helper/agent.ts", toolPath])
      for (const problem of report.problems) expect(problem.fix).toMatch(new RegExp(`^fix lib/version\\.ts:\\d+:\\d+, which ${problem.file.replaceAll(".", "\\.")} imports$`))
      // The terminal says it once, at the helper, with the files it breaks.
      const said = yield* dev.waitFor(/lib\/version\.ts:\d+:\d+: .*\n\s*breaks .*, which import it\n\s*fix: fix lib\/version\.ts:\d+:\d+/)
      expect(said).toContain("agents/helper/agent.ts")
      expect(said).toContain(toolPath)
      expect(dev.output()).not.toContain("importing the file failed")
    }))

  it.scopedLive("while a playbook is left out, an event a tool emits is refused, and the tool's error says why", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/helper/agent.ts": agentSource,
        [toolPath]: answerTool(`"unused"`).replace(
          `run: () => Effect.succeed("unused")`,
          `run: (_input, context) => Effect.map(Effect.orDie(context.emit("ping", { n: 1 })), ({ runs }) => String(runs.length))`
        ),
        "playbooks/on-ping.ts": `import { Schema } from "effect"
import { definePlaybook, event } from "foundry"
import helper from "../agents/helper/agent.js"
export default definePlaybook({ on: event("ping", Schema.Struct({ n: Schema.Number })), agent: helper, message: () => "pinged", when: 42 as any })
`
      })
      const { url } = yield* devOn(root)
      const { toolOutputs } = yield* runHelper(url)
      expect(toolOutputs).toEqual([])
      const runs = (yield* http(`${url}/api/runs?agent=helper`)).json as ReadonlyArray<{ id: string }>
      const events = (yield* http(`${url}/api/runs/${runs[runs.length - 1]?.id}/events`)).json as ReadonlyArray<{ type: string; data: { error?: string } }>
      expect(events.find((e) => e.type === "tool.call.failed")?.data.error).toContain("not delivered: the project serves only the routes that build, and leaves out playbooks/on-ping.ts")
    }))

  it.scopedLive("two agents that are each other's subagents are told of the import cycle", () =>
    Effect.gen(function*() {
      const agent = (other: string) => `import { defineAgent } from "foundry"
import other from "../${other}/agent.js"
export default defineAgent({ description: "one of two", subagents: [other] })
`
      const root = yield* tempProject({ "agents/boss/agent.ts": agent("worker"), "agents/worker/agent.ts": agent("boss") })
      const { url } = yield* devOn(root)
      const report = (yield* http(`${url}/api/build`)).json as { problems: ReadonlyArray<{ problem: string; fix: string }> }
      expect(report.problems.map((p) => p.problem).join("\n")).toContain("subagents[0] is undefined, but must be an agent")
      expect(report.problems.map((p) => p.fix).join("\n")).toContain("two agents cannot be each other's subagents")
    }))

  it.scopedLive("a service no layer provides is listed in GET /api/build under the tool's file, with its fix apart", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "lib/clock.ts": `import { Context } from "effect"\nexport class Clock extends Context.Tag("Clock")<Clock, { readonly now: () => string }>() {}\n`,
        "agents/helper/agent.ts": agentSource,
        [toolPath]: `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
import { Clock } from "../../../lib/clock.js"
export default defineTool({ description: "the time", input: Schema.Struct({}), output: Schema.String, requires: [Clock], run: () => Effect.map(Clock, (c) => c.now()) })
`
      })
      const { url } = yield* devOn(root)
      const report = (yield* http(`${url}/api/build`)).json as { problems: ReadonlyArray<{ file: string; problem: string; fix: string }> }
      expect(report.problems).toEqual([{
        file: toolPath,
        problem: `tool "helper/answer" requires the service Clock, which no layer in foundry.config.ts provides`,
        fix: "add a layer that provides Clock to `layers` in foundry.config.ts"
      }])
    }))

  it.scopedLive("a config change the running server cannot apply says which setting changed, and that a restart applies it", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const config = (concurrency: number) => `import { defineConfig } from "foundry"
export default defineConfig({ server: { port: ${port} }, concurrency: ${concurrency} })
`
      const root = yield* tempProject({ "foundry.config.ts": config(2), "agents/helper/agent.ts": agentSource, [toolPath]: constantTool("v0") })
      const dev = yield* startCli(["dev", root])
      yield* dev.waitFor(/listening on/)
      const mark = dev.output().length
      writeFileSync(join(root, "foundry.config.ts"), config(3))
      const said = yield* dev.waitFor(/foundry\.config\.ts changed [^\n]*/, mark)
      expect(said).toContain("foundry.config.ts changed concurrency: restart foundry dev to apply it")
      // The notice is said as the reload starts; the build status has it once the reload is done.
      yield* reloadedBuild(dev, mark)
      const report = (yield* http(`http://127.0.0.1:${port}/api/build`)).json as { restartNeeded: string | null }
      expect(report.restartNeeded).toContain("changed concurrency:")
    }))

  it.scopedLive("a port that is no port, or one another server holds, is refused in one line saying what to do", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "agents/helper/agent.ts": agentSource, [toolPath]: constantTool("v0") })
      const wrong = yield* runCli(["dev", root, "--port", "99999"]).pipe(Effect.timeout("30 seconds"), Effect.orDie)
      expect(wrong.code).toBe(2)
      expect(wrong.stdout + wrong.stderr).toContain("--port 99999 is no port: give one from 1 to 65535")

      const { url } = yield* devOn(root)
      const port = new URL(url).port
      const taken = yield* runCli(["dev", root, "--port", port]).pipe(Effect.timeout("30 seconds"), Effect.orDie)
      expect(taken.code).toBe(1)
      expect(taken.stderr).toContain(`port ${port} on 127.0.0.1 is taken: another server listens there. Stop it, or pass --port <another port>`)
      expect(taken.stderr).not.toMatch(/\n\s+at /)
    }))

  it.scopedLive("on an empty folder suggests foundry init", () =>
    Effect.gen(function*() {
      const folder = yield* scratchFolder
      const port = yield* freePort
      const dev = yield* startCli(["dev", folder, "--port", String(port)])
      const hint = yield* dev.waitFor(/[^\n]*foundry init[^\n]*/)
      expect(hint).toContain("foundry init")
      expect(dev.output()).toContain(folder)
    }))
})

describe.skipIf(skipPostgres)("a cold start with a broken route file", () => {
  it.scopedLive("serves on the config's port and stores runs in the config's PostgreSQL, not in SQLite", () =>
    Effect.gen(function*() {
      const pgUrl = yield* freshSchema
      const port = yield* freePort
      const root = yield* tempProject({
        "foundry.config.ts": `import { defineConfig } from "foundry"
export default defineConfig({ server: { port: ${port} }, store: { postgres: ${JSON.stringify(pgUrl)} } })
`,
        "agents/helper/agent.ts": agentSource,
        [toolPath]: brokenTool
      })
      // No --port: the config's port must be used even though the routes do not build.
      const dev = yield* startCli(["dev", root])
      yield* dev.waitFor(new RegExp(`listening on http://127\\.0\\.0\\.1:${port}\\b`))
      expect(dev.output()).toMatch(/do not build[\s\S]*agents\/helper\/tools\/answer\.tool\.ts/)
      expect(dev.output()).toMatch(/store:\s+postgres:\/\/[^\n]*127\.0\.0\.1/)
      expect(dev.output()).not.toContain(".foundry/foundry.db")
      const url = `http://127.0.0.1:${port}`
      const health = yield* http(`${url}/health`)
      expect(health.status).toBe(200)
      expect(health.json).toMatchObject({ status: "ok", agents: 0 })
      const build = (yield* http(`${url}/api/build`)).json as { problems: ReadonlyArray<{ file: string }> }
      expect(build.problems.map((p) => p.file)).toContain(toolPath)

      const mark = dev.output().length
      writeFileSync(join(root, toolPath), constantTool("from-postgres"))
      yield* reloadedBuild(dev, mark)
      expect((yield* http(`${url}/health`)).json).toMatchObject({ status: "ok", agents: 1 })
      const runId = yield* expectAnswer(url, "from-postgres")

      const sql = yield* connect(pgUrl)
      const runs = yield* sql<{ readonly id: string; readonly agent: string; readonly status: string; readonly output: string }>`
        SELECT id, agent, status, output FROM foundry_runs`
      expect(runs).toEqual([{ id: runId, agent: "helper", status: "completed", output: "the tool said: from-postgres" }])
      const stored = existsSync(join(root, ".foundry")) ? readdirSync(join(root, ".foundry")) : []
      expect(stored.filter((file) => /\.(db|sqlite)(-wal|-shm|-journal)?$/.test(file))).toEqual([])
    }))
})
