/**
 * `startup`: how long the CLI makes a person wait. Wall milliseconds from spawning
 * `node bin/foundry.js` to: `--version` printed and exited, `--help` printed (the command parser
 * loaded), `routes` printed for the example project, `check` passed on it (the first time with
 * tsc, then with nothing changed), `runs` listed by a server serving the example (a command that
 * asks a server), `dev` answering `/health` on the example project; and under `foundry dev`, from saving a tool file (half the saves written in place, half
 * written to a temporary file and renamed over it, as editors and `sed -i` do) to the server
 * printing that the new build serves, confirmed by a run that sees the new behaviour.
 */
import { cpSync, renameSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { freePort, requestJson, spawnFoundry, stopProcess, waitForOutput } from "../support/foundryProcess.js"
import { tempProject } from "../support/project.js"
import { progress } from "../support/runtime.js"
import { percentile, round } from "../support/stats.js"

const repository = fileURLToPath(new URL("../../", import.meta.url))
const exampleFolders = ["agents", "tools", "playbooks", "schedules", "environments", "lib", "foundry.config.ts"]

/** Milliseconds from spawn to exit of `foundry <args>`, which must print `expected` if given. */
const timeCommand = (args: ReadonlyArray<string>, expected?: RegExp) =>
  Effect.gen(function*() {
    const started = performance.now()
    const child = spawnFoundry(args)
    yield* Effect.async<void>((resume) => {
      child.child.once("exit", () => resume(Effect.void))
    })
    if (child.child.exitCode !== 0) return yield* Effect.fail(new Error(`foundry ${args.join(" ")} failed:\n${child.output()}`))
    if (expected !== undefined && !expected.test(child.output())) {
      return yield* Effect.fail(new Error(`foundry ${args.join(" ")} did not say ${expected}:\n${child.output()}`))
    }
    return performance.now() - started
  })

const summary = (samples: ReadonlyArray<number>) => ({
  p50: round(percentile(samples, 50), 0),
  min: round(Math.min(...samples), 0),
  max: round(Math.max(...samples), 0)
})

/** A copy of the example project, so the benchmark's store and generated files stay out of the repository. */
const exampleCopy = Effect.gen(function*() {
  const root = yield* tempProject({})
  for (const entry of exampleFolders) cpSync(join(repository, entry), join(root, entry), { recursive: true })
  return root
})

/** The address of `foundry start` serving another copy of the example, for the commands that ask a server; stopped with the scope. */
const servingCopy = Effect.gen(function*() {
  const root = yield* exampleCopy
  const port = yield* freePort
  const server = yield* Effect.acquireRelease(Effect.sync(() => spawnFoundry(["start", root, "--port", String(port)])), (server) => stopProcess(server, "SIGTERM"))
  yield* waitForOutput(server, /listening on/)
  return `http://127.0.0.1:${port}`
})

/** Milliseconds from spawning `foundry dev` on `root` to a 200 from `/health`. */
const timeDevStart = (root: string) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const started = performance.now()
    const server = spawnFoundry(["dev", root, "--port", String(port)])
    while (true) {
      const health = yield* requestJson(`http://127.0.0.1:${port}/health`).pipe(Effect.option)
      if (health._tag === "Some" && health.value.status === 200) break
      if (server.child.exitCode !== null) return yield* Effect.fail(new Error(`foundry dev exited:\n${server.output()}`))
      yield* Effect.sleep("5 millis")
    }
    const elapsed = performance.now() - started
    yield* stopProcess(server, "SIGTERM")
    return elapsed
  })

const versionedTool = (version: number) => `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Says which version of the tool is running",
  input: Schema.Struct({}),
  output: Schema.String,
  run: () => Effect.succeed("version ${version}")
})
`

const versionedAgent = `import { defineAgent, Scripted } from "foundry"
import version from "./tools/version.tool.js"

export default defineAgent({
  description: "Reports its tool's version",
  model: Scripted.make([{ toolCalls: [{ name: "version", arguments: {} }] }, { text: "ok" }]),
  tools: [version]
})
`

/** The version the tool reported in run `runId`, read from the run's events. */
const toolOutput = (url: string, runId: string) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 200; attempt++) {
      const events = yield* requestJson(`${url}/api/runs/${runId}/events`)
      const list = Array.isArray(events.json) ? events.json : []
      for (const event of list) {
        if (typeof event === "object" && event !== null && "type" in event && event.type === "tool.call.completed" && "data" in event) {
          const data: unknown = event.data
          if (typeof data === "object" && data !== null && "output" in data) return String(data.output)
        }
      }
      yield* Effect.sleep("10 millis")
    }
    return yield* Effect.fail(new Error(`run ${runId} never completed its tool call`))
  })

/** Save-to-new-behaviour under `foundry dev`, `edits` times. */
const timeSaves = (edits: number) =>
  Effect.gen(function*() {
    const root = yield* tempProject({ "agents/versioned/agent.ts": versionedAgent, "agents/versioned/tools/version.tool.ts": versionedTool(0) })
    const tool = join(root, "agents/versioned/tools/version.tool.ts")
    const port = yield* freePort
    const server = spawnFoundry(["dev", root, "--port", String(port)])
    const url = `http://127.0.0.1:${port}`
    yield* waitForOutput(server, /listening on/)
    const samples: Array<number> = []
    for (let version = 1; version <= edits; version++) {
      const from = server.output().length
      const started = performance.now()
      if (version % 2 === 0) {
        writeFileSync(`${tool}.tmp`, versionedTool(version))
        renameSync(`${tool}.tmp`, tool)
      } else {
        writeFileSync(tool, versionedTool(version))
      }
      while (!/reloaded \(build \d+\)/.test(server.output().slice(from))) {
        if (performance.now() - started > 20_000) return yield* Effect.fail(new Error(`no reload after save ${version}:\n${server.output()}`))
        yield* Effect.sleep("2 millis")
      }
      samples.push(performance.now() - started)
      const created = yield* requestJson(`${url}/api/runs`, { agent: "versioned", message: "which version?" })
      const runId = typeof created.json === "object" && created.json !== null && "runId" in created.json ? String(created.json.runId) : ""
      const output = yield* toolOutput(url, runId)
      if (output !== `version ${version}`) return yield* Effect.fail(new Error(`after save ${version} the tool said "${output}"`))
      // Let the background type check of this build finish, so the next save is timed alone.
      yield* Effect.sleep("1500 millis")
    }
    yield* stopProcess(server, "SIGTERM")
    return samples
  })

export const startup = Effect.gen(function*() {
  const repeat = 10
  const samples: Record<"version" | "help" | "routes" | "check" | "runs" | "dev", Array<number>> = {
    version: [],
    help: [],
    routes: [],
    check: [],
    runs: [],
    dev: []
  }
  const example = yield* exampleCopy
  const server = yield* servingCopy
  yield* progress(`startup: --version, --help, routes, check, runs, dev to healthy (${repeat} times each)`)
  // The first check of the copy runs tsc; the later ones find nothing changed since it passed.
  const firstCheck = yield* timeCommand(["check", example])
  for (let i = 0; i < repeat; i++) {
    samples.version.push(yield* timeCommand(["--version"]))
    samples.help.push(yield* timeCommand(["--help"]))
    samples.routes.push(yield* timeCommand(["routes", example]))
    samples.check.push(yield* timeCommand(["check", example], /nothing they read changed since the last check passed/))
    samples.runs.push(yield* timeCommand(["runs", "--url", server], /no runs|STATUS/))
    samples.dev.push(yield* timeDevStart(example))
  }
  yield* progress(`startup: save to new behaviour under foundry dev (${repeat} saves)`)
  const saves = yield* timeSaves(repeat)
  const figures = {
    versionMs: summary(samples.version),
    helpMs: summary(samples.help),
    routesMs: summary(samples.routes),
    checkFirstMs: round(firstCheck, 0),
    checkUnchangedMs: summary(samples.check),
    runsMs: summary(samples.runs),
    devToHealthyMs: summary(samples.dev),
    saveToNewBehaviourMs: summary(saves)
  }
  return {
    scenario: "startup",
    ...figures,
    target: { versionMs: "< 300", routesMs: "< 1000", devToHealthyMs: "< 1500", saveToNewBehaviourMs: "p50 < 300" },
    meetsTarget: {
      version: figures.versionMs.p50 < 300,
      routes: figures.routesMs.p50 < 1000,
      devToHealthy: figures.devToHealthyMs.p50 < 1500,
      saveToNewBehaviour: figures.saveToNewBehaviourMs.p50 < 300
    }
  }
}).pipe(Effect.scoped)
