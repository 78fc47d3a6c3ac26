import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { runCli, startCli } from "../support/cli.js"
import { freshSchema, skipPostgres } from "../support/postgres.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { payerFiles, tempProject } from "../support/tempProject.js"

const repository = new URL("../../", import.meta.url).pathname

/** A copy of the example project, so commands that write `.foundry/` leave the repository alone. */
const exampleCopy = Effect.acquireRelease(
  Effect.sync(() => {
    const root = mkdtempSync(join(tmpdir(), "foundry-example-"))
    for (const entry of ["agents", "tools", "playbooks", "schedules", "environments", "lib", "foundry.config.ts", "package.json"]) {
      cpSync(join(repository, entry), join(root, entry), { recursive: true })
    }
    return root
  }),
  (root) => Effect.sync(() => rmSync(root, { recursive: true, force: true }))
)

/** An agent whose one tool naps for a minute: a run of it is under way long enough to be stopped. */
const napperProject = tempProject({
  "agents/napper/agent.ts": `import { defineAgent, Scripted } from "foundry"
import nap from "./tools/nap.tool.js"
export default defineAgent({ description: "Naps", tools: [nap], model: Scripted.make([{ toolCalls: [{ name: "nap", arguments: {} }] }, { text: "rested" }]) })
`,
  "agents/napper/tools/nap.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
export default defineTool({ description: "Naps", input: Schema.Struct({}), output: Schema.String, run: () => Effect.as(Effect.sleep("60 seconds"), "napped") })
`
})

describe("route files are ES modules", () => {
  it.scopedLive("a project whose package.json does not say \"type\": \"module\" still loads", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "package.json": "{\"name\": \"legacy\"}\n",
        "agents/echo/agent.ts": `import { defineAgent } from "foundry"\nimport { Schema } from "effect"\nexport const Note = Schema.String\nexport default defineAgent({ description: "Echoes" })\n`
      })
      const result = yield* runCli(["routes", root])
      expect(result.stderr).toBe("")
      expect(result.code).toBe(0)
      expect(result.stdout).toMatch(/agent\s+echo\s+agents\/echo\/agent\.ts/)
    }))
})

describe("tools defined in an agent's file", () => {
  it.scopedLive("are checked as tool files are: a bad input or timeout is a route error naming the tool, not a crash or an internal error at run time", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/pinger/agent.ts": `import { Effect, Schema } from "effect"
import { defineAgent, defineTool } from "foundry"
const ping = defineTool({ name: "ping", description: "Check that tools work", input: "nope" as never, output: Schema.String, run: () => Effect.succeed("pong") })
const nap = defineTool({ name: "nap", description: "Naps", input: Schema.Struct({}), output: Schema.String, timeout: "later" as never, run: () => Effect.succeed("napped") })
export default defineAgent({ description: "Pings", tools: [ping, nap] })
`
      })
      const result = yield* runCli(["routes", root])
      expect(result.code).toBe(1)
      expect(result.stderr).not.toContain("Cannot read properties")
      expect(result.stderr).toContain(`agents/pinger/agent.ts: the tool "ping" defined in this file: input is not a Schema`)
      expect(result.stderr).toContain(`the tool "nap" defined in this file: timeout "later" is not a duration`)
    }))
})

describe("foundry run", () => {
  it.scopedLive("streams the answer of one run and exits 0 when it completes", () =>
    Effect.gen(function*() {
      const root = yield* exampleCopy
      const result = yield* runCli(["run", "support", "Where is order 42?", "--dir", root])
      expect(result.code).toBe(0)
      expect(result.stdout).toContain("shipped")
      expect(result.stderr).toContain("-> lookup-order")
      expect(result.stderr).toContain(`{"orderId":"42"}`)
      // A tool that fails: its error, once.
      const missing = yield* runCli(["run", "support", "Where is order 3?", "--dir", root])
      expect(missing.stderr).toMatch(/\n<- lookup-order failed: [^\n]*OrderNotFound/)
      expect(missing.stderr).not.toContain("lookup-order failed: lookup-order failed")
    }))

  it.scopedLive("a run that asks a subagent finishes in the command; a subagent's approval stops it as the run's own does", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/helper/agent.ts": `import { defineAgent, Scripted } from "foundry"
import guarded from "./tools/guarded.tool.js"
export default defineAgent({
  description: "Helps",
  tools: [guarded],
  model: Scripted.make((request, index) => {
    const asked = request.messages.filter((m) => m._tag === "user").map((m) => m.content).pop() ?? ""
    if (index === 0 && asked.includes("guarded")) return { toolCalls: [{ name: "guarded", arguments: {} }] }
    return { text: "helped" }
  })
})
`,
        "agents/helper/tools/guarded.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
export default defineTool({ description: "Asks first", input: Schema.Struct({}), output: Schema.String, approval: "always", run: () => Effect.succeed("done") })
`,
        "agents/boss/agent.ts": `import { defineAgent, Scripted } from "foundry"
import helper from "../helper/agent.js"
export default defineAgent({
  description: "Delegates",
  subagents: [helper],
  model: Scripted.make((request, index) => {
    const asked = request.messages.filter((m) => m._tag === "user").map((m) => m.content).pop() ?? ""
    return index === 0 ? { toolCalls: [{ name: "ask-helper", arguments: { message: asked } }] } : { text: "the helper says: done" }
  })
})
`
      })
      const plain = yield* runCli(["run", "boss", "help me", "--dir", root])
      expect(plain.code).toBe(0)
      expect(plain.stdout).toContain("the helper says: done")
      const waiting = yield* runCli(["run", "boss", "help me, guarded", "--dir", root])
      expect(waiting.code).toBe(1)
      expect(waiting.stderr).toMatch(/its subagent's call to guarded waits for approval apr_\w+/)
    }))

  it.scopedLive("Ctrl-C cancels the run it started, says so with its id and exits 130: no run is left running with no process to go on with it", () =>
    Effect.gen(function*() {
      const root = yield* napperProject
      const cli = yield* startCli(["run", "napper", "take a nap", "--dir", root])
      yield* cli.waitFor(/-> nap/)
      cli.child.kill("SIGINT")
      // As the shell's own Ctrl-C of a command: 128 + SIGINT's 2, so `foundry run ... && next` does not go on.
      const code = yield* Effect.async<number | null>((resume) => {
        if (cli.child.exitCode !== null || cli.child.signalCode !== null) resume(Effect.succeed(cli.child.exitCode))
        else cli.child.once("exit", (exited) => resume(Effect.succeed(exited)))
      })
      expect(code, cli.output()).toBe(130)
      expect(cli.output()).toMatch(/run run_\w+ was cancelled: the command was interrupted/)
      const server = yield* startServer(root, { storeFile: join(root, ".foundry/foundry.db") })
      const runs = (yield* http(`${server.url}/api/runs`)).json as ReadonlyArray<{ readonly status: string }>
      expect(runs.map((run) => run.status)).toEqual(["cancelled"])
    }))

  it.scopedLive("a run cancelled through a server on the same store stops the command, which says so with the run's id and exits 1", () =>
    Effect.gen(function*() {
      const root = yield* napperProject
      const cli = yield* startCli(["run", "napper", "take a nap", "--dir", root])
      yield* cli.waitFor(/-> nap/)
      const server = yield* startServer(root, { storeFile: join(root, ".foundry/foundry.db") })
      const runs = (yield* http(`${server.url}/api/runs`)).json as ReadonlyArray<{ readonly id: string }>
      const runId = runs[0]?.id ?? ""
      const cancelled = yield* runCli(["runs", "cancel", runId, "--url", server.url])
      expect([cancelled.code, cancelled.stdout.trim()]).toEqual([0, `cancelled run ${runId} of agent napper`])
      expect((yield* http(`${server.url}/api/runs/${runId}`)).json).toMatchObject({ status: "cancelled" })
      const code = yield* Effect.async<number | null>((resume) => {
        if (cli.child.exitCode !== null || cli.child.signalCode !== null) resume(Effect.succeed(cli.child.exitCode))
        else cli.child.once("exit", (exited) => resume(Effect.succeed(exited)))
      }).pipe(Effect.timeoutFail({ duration: "15 seconds", onTimeout: () => new Error(`foundry run went on after the cancel:\n${cli.output()}`) }))
      expect(code, cli.output()).toBe(1)
      expect(cli.output()).toContain(`run ${runId} was cancelled`)
      expect(cli.output()).not.toContain("rested")
    }), 40_000)

  it.scopedLive("a run that waits on a person says what for, where to decide it and how, and exits 1", () =>
    Effect.gen(function*() {
      const root = yield* exampleCopy
      const result = yield* runCli(["run", "support", "Refund order 42", "--dir", root])
      expect(result.code).toBe(1)
      expect(result.stderr).toContain(`-> refund-order {"orderId":"42"} (asks a person first)`)
      const approval = /refund-order needs a person's approval \((apr_[0-9a-z_]+)\)/.exec(result.stderr)?.[1]
      expect(approval).toBeDefined()
      expect(result.stderr).toContain("http://127.0.0.1:4141/approvals")
      expect(result.stderr).toContain(`curl -X POST http://127.0.0.1:4141/api/approvals/${approval}`)
      expect(result.stderr).toContain(`or: foundry approvals approve ${approval}`)
      expect(result.stderr).toContain("the run of support has not finished: it waits")
      expect(result.stderr).not.toMatch(/\n\s+at /)

      // Decided from the terminal, as it says: listed, approved, and the run goes on on the server.
      const server = yield* startServer(root, { storeFile: join(root, ".foundry/foundry.db") })
      const waiting = yield* runCli(["approvals", "--url", server.url])
      expect(waiting.code).toBe(0)
      expect(waiting.stdout).toMatch(new RegExp(`^${approval}\\s+run_\\w+\\s+support\\s+refund-order`, "m"))
      const listed = yield* runCli(["runs", "--url", server.url, "--status", "suspended"])
      expect(listed.stdout).toMatch(/^run_\w+\s+support\s+default\s+suspended\s+.*Refund order 42$/m)
      const approved = yield* runCli(["approvals", "approve", approval ?? "", "--url", server.url])
      expect([approved.code, approved.stderr]).toEqual([0, ""])
      expect(approved.stdout).toMatch(/approved refund-order for run run_\w+: the run goes on/)
      const runId = /for run (run_\w+)/.exec(approved.stdout)?.[1] ?? ""
      expect((yield* waitForRun(server.url, runId)).status).toBe("completed")
      const again = yield* runCli(["approvals", "deny", approval ?? "", "--url", server.url])
      expect(again.code).toBe(1)
      expect(again.stderr).toContain("already approved")
      expect((yield* runCli(["approvals", "--url", server.url])).stdout.trim()).toBe("no approvals are waiting")
    }))

  it.scopedLive("an approval policy that throws sends the call to a person, and the terminal says the policy broke and where", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(payerFiles(`() => { throw new Error("limits table not loaded") }`))
      const result = yield* runCli(["run", "payer", "pay", "--dir", root])
      expect(result.code).toBe(1)
      expect(result.stderr).toMatch(/pay needs a person's approval \(apr_\w+\)/)
      // Logged, as the command's other log lines are.
      expect(result.stdout + result.stderr).toMatch(/the approval policy of tool pay \(agents\/payer\/tools\/pay\.tool\.ts\) threw on call \S+ of run run_\w+: limits table not loaded; a person decides the call/)
    }))

  it.scopedLive("exits 1 with a readable message for an unknown agent", () =>
    Effect.gen(function*() {
      const root = yield* exampleCopy
      const result = yield* runCli(["run", "billing", "hello", "--dir", root])
      expect(result.code).toBe(1)
      expect(result.stderr).toContain(`there is no agent "billing"`)
      expect(result.stderr).not.toMatch(/\n\s+at /)
    }))

  it.scopedLive("exits 1 when the run fails, saying why", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/flaky/agent.ts": `import { defineAgent, Scripted } from "foundry"
export default defineAgent({
  description: "Always fails",
  model: Scripted.make([{ error: { kind: "permanent", status: 401, message: "invalid api key" } }])
})
`
      })
      const result = yield* runCli(["run", "flaky", "hello", "--dir", root])
      expect(result.code).toBe(1)
      expect(result.stderr).toContain("invalid api key")
    }))

  it.scopedLive("refuses a folder that is no project, an instance id no instance can have and an empty message, leaving nothing behind", () =>
    Effect.gen(function*() {
      const empty = yield* tempProject({})
      const outside = yield* runCli(["run", "support", "hi"], { cwd: empty })
      expect(outside.code).toBe(2)
      expect(outside.stderr).toContain(`${empty} is not a Foundry project`)
      expect(existsSync(join(empty, ".foundry"))).toBe(false)
      const check = yield* runCli(["check", empty])
      expect(check.code).toBe(2)
      expect(check.stderr).toContain("is not a Foundry project")
      // Serving it, or making a token in it, would leave a store no server of the project reads.
      const start = yield* runCli(["start", "--port", "0"], { cwd: empty })
      expect(start.code).toBe(1)
      expect(start.stderr).toContain(`${empty} is not a Foundry project`)
      expect(start.stdout).not.toContain("listening")
      const token = yield* runCli(["token", "create", "--scope", "read", "--dir", empty])
      expect(token.code).toBe(1)
      expect(token.stderr).toContain(`${empty} is not a Foundry project`)
      expect(existsSync(join(empty, ".foundry"))).toBe(false)
      // A folder that is not there, or a file: said so, with the way on (it said "Path 'x' must exist").
      const missing = yield* runCli(["dev", "no-such-folder"], { cwd: empty })
      expect(missing.code).toBe(2)
      expect(missing.stderr).toContain(`there is no folder no-such-folder (${join(empty, "no-such-folder")}): pass the project's folder, or create a project there with \`foundry init no-such-folder\``)
      writeFileSync(join(empty, "notes.txt"), "")
      const file = yield* runCli(["runs", "--dir", "notes.txt"], { cwd: empty })
      expect(file.code).toBe(2)
      expect(file.stderr).toContain("notes.txt is a file, not a folder")

      const root = yield* exampleCopy
      const badInstance = yield* runCli(["run", "support", "hi", "--instance", "x y/z", "--dir", root])
      expect(badInstance.code).toBe(1)
      expect(badInstance.stderr).toContain(`"x y/z" is not an instance id`)
      const emptyMessage = yield* runCli(["run", "support", " ", "--dir", root])
      expect(emptyMessage.code).toBe(1)
      expect(emptyMessage.stderr).toContain("the message is empty")
    }))

  it.scopedLive("a bad flag prints usage, not a stack trace", () =>
    Effect.gen(function*() {
      const result = yield* runCli(["dev", "--bogus"])
      expect(result.code).toBe(2)
      expect(`${result.stdout}${result.stderr}`).not.toMatch(/\n\s+at /)
      expect(`${result.stdout}${result.stderr}`).toMatch(/bogus|Received unknown argument/i)
    }))
})

describe.skipIf(skipPostgres)("foundry run in a project that configures a cluster", () => {
  it.scopedLive("runs its one run in its own process, not as a cluster runner: a runner on the machine holding the port does not stop it", () =>
    Effect.gen(function*() {
      // A runner of the cluster on this machine, as `foundry start` would be, holding the runner port.
      const runnerPort = yield* Effect.acquireRelease(
        Effect.async<{ readonly server: Server; readonly port: number }>((resume) => {
          const server = createServer()
          server.listen(0, "127.0.0.1", () => {
            const address = server.address()
            resume(Effect.succeed({ server, port: typeof address === "object" && address !== null ? address.port : 0 }))
          })
        }),
        ({ server }) => Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
        })
      )
      const url = yield* freshSchema
      const root = yield* tempProject({
        "agents/echo/agent.ts": `import { defineAgent, Scripted } from "foundry"\nexport default defineAgent({ description: "Echoes", model: Scripted.make([{ text: "echoed" }]) })\n`,
        "foundry.config.ts": `import { defineConfig } from "foundry"
export default defineConfig({ store: { postgres: ${JSON.stringify(url)} }, cluster: { port: ${runnerPort.port} } })
`
      })
      const result = yield* runCli(["run", "echo", "hello", "--dir", root])
      expect(result.stderr).not.toContain("port")
      expect(result.code).toBe(0)
      expect(result.stdout).toContain("echoed")
    }))
})

describe("foundry routes and foundry check", () => {
  it.scopedLive("routes prints every route of the example with its kind and file", () =>
    Effect.gen(function*() {
      const root = yield* exampleCopy
      const result = yield* runCli(["routes", root])
      expect(result.code).toBe(0)
      for (const line of [
        // Without OPENAI_API_KEY (the tests' CLI runs without one) it says what the agent runs on here.
        /agent\s+support\s+agents\/support\/agent\.ts\s+model openai:gpt-4\.1-mini \(runs on demo here: no OPENAI_API_KEY\)/,
        /agent\s+support\/triage\s+agents\/support\/triage\/agent\.ts/,
        /tool\s+support\/lookup-order\s+agents\/support\/tools\/lookup-order\.tool\.ts/,
        /tool\s+support\/refund-order\s+agents\/support\/tools\/refund-order\.tool\.ts\s+requires Orders; asks for approval/,
        /tool\s+current-time\s+tools\/current-time\.tool\.ts/,
        /schedule\s+daily-review\s+schedules\/daily-review\.ts/,
        /playbook\s+urgent-ticket\s+playbooks\/urgent-ticket\.ts/,
        /environment\s+workspace\s+environments\/workspace\.ts/
      ]) expect(result.stdout).toMatch(line)
    }))

  it.scopedLive("routes names an agent's subagents and the tools its model calls them by", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/desk/agent.ts": `import { defineAgent } from "foundry"\nimport triage from "./triage/agent.js"\nexport default defineAgent({ description: "Front desk", subagents: [triage] })\n`,
        "agents/desk/triage/agent.ts": `import { defineAgent } from "foundry"\nexport default defineAgent({ description: "Sorts tickets" })\n`
      })
      const result = yield* runCli(["routes", root])
      expect(result.code).toBe(0)
      expect(result.stdout).toMatch(/agent\s+desk\s+agents\/desk\/agent\.ts\s+model demo; tools: none; subagents: desk\/triage \(as ask-triage\)/)
    }))

  it.scopedLive("routes lists a project a build would refuse, then says what it would refuse and exits 1", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/desk/agent.ts": `import { defineAgent, defineEnvironment } from "foundry"\nimport files from "../../environments/files.js"\nexport default defineAgent({ description: "Front desk", environment: files })\n`,
        "environments/files.ts": `import { defineEnvironment } from "foundry"\nexport default defineEnvironment({ description: "Shared files", backend: { directory: "./shared" } })\n`
      })
      const result = yield* runCli(["routes", root])
      expect(result.stdout).toMatch(/agent\s+desk\s+agents\/desk\/agent\.ts/)
      expect(result.stderr).toMatch(/environments\/files\.ts.*backend\.directory "\.\/shared" is not a folder/s)
      expect(result.stderr).toMatch(/foundry dev would not serve this build/)
      expect(result.code).toBe(1)
    }))

  it.scopedLive("check passes on the example and fails, naming the service, when its layer is removed", () =>
    Effect.gen(function*() {
      const root = yield* exampleCopy
      const good = yield* runCli(["check", root])
      expect(good.stdout).toContain("check passed")
      expect(good.code).toBe(0)
      const generated = readFileSync(join(root, ".foundry/routes.d.ts"), "utf8")
      expect(generated).toContain(`"support/triage": typeof agent_1`)
      writeFileSync(
        join(root, "foundry.config.ts"),
        `import { defineConfig } from "foundry"\nexport default defineConfig({ layers: [] })\n`
      )
      const bad = yield* runCli(["check", root])
      expect(bad.code).toBe(1)
      // The generated type check and the runtime check both name the missing service.
      expect(bad.stderr).toMatch(/requirements-check\.ts.*Orders.*does not satisfy the constraint 'never'/)
      expect(bad.stderr).toContain(`tool "support/lookup-order"`)
      expect(bad.stderr).toContain("requires the service Orders")
    }))

  it.scopedLive("check type-checks a tool that imports a Node built-in with Node's types", () =>
    Effect.gen(function*() {
      const root = yield* exampleCopy
      writeFileSync(join(root, "tools/append-note.tool.ts"), `import { appendFileSync } from "node:fs"
import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Appends a note to a file",
  input: Schema.Struct({ note: Schema.String }),
  output: Schema.String,
  run: ({ note }) => Effect.sync(() => { appendFileSync("notes.txt", note + "\\n"); return "noted" })
})
`)
      const result = yield* runCli(["check", root])
      expect(result.stderr).not.toContain("Cannot find module 'node:fs'")
      expect(result.stdout).toContain("check passed")
    }))

  it.scopedLive("check makes the environments' pure modules: a name the package does not export is the environment file's problem", () =>
    Effect.gen(function*() {
      const root = yield* exampleCopy
      const workspace = join(root, "environments/workspace.ts")
      writeFileSync(workspace, readFileSync(workspace, "utf8").replace(`pick: ["read", "write", "utils"]`, `pick: ["read", "wirte", "utils"]`))
      const result = yield* runCli(["check", root])
      expect(result.code).toBe(1)
      expect(result.stderr).toContain(`environments/workspace.ts: env:xlsx: @e965/xlsx has no export "wirte"`)
      expect(result.stderr).not.toContain("check passed")
    }))

  it.scopedLive("check says a pure module's package that is not installed is to be installed, once", () =>
    Effect.gen(function*() {
      const root = yield* exampleCopy
      const workspace = join(root, "environments/workspace.ts")
      writeFileSync(workspace, readFileSync(workspace, "utf8").replace(`from: "@e965/xlsx"`, `from: "no-such-package-xyz"`))
      const result = yield* runCli(["check", root])
      expect(result.code).toBe(1)
      expect(result.stderr).toContain(`the package "no-such-package-xyz" is not installed`)
      expect(result.stderr).toContain("npm install no-such-package-xyz")
      expect(result.stderr.split("is not installed").length).toBe(2)
      expect(result.stderr).not.toContain("pick only names no-such-package-xyz exports")
    }))

  it.scopedLive("a file that does not parse is the only one reported: the playbook and the schedules keep their agents", () =>
    Effect.gen(function*() {
      const root = yield* exampleCopy
      // The project no longer bundles as a whole: the sound files must still share one module per agent.
      writeFileSync(join(root, "schedules/nightly.ts"), "export default {\n")
      const result = yield* runCli(["check", root])
      expect(result.code).toBe(1)
      expect(result.stderr).toContain("1 broken route file")
      expect(result.stderr).toContain("schedules/nightly.ts")
      expect(result.stderr).not.toContain("urgent-ticket")
      expect(result.stderr).not.toContain("daily-review")
    }))
})

