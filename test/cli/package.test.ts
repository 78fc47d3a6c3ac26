/**
 * The package as users get it: `npm pack`, installed into an empty folder outside the repository,
 * then `foundry init`, a type check of the new project, `foundry dev`, and one run over HTTP. The
 * folder is not below the repository, so nothing can resolve from it: the framework and `effect`
 * come from the installed package.
 */
import { execFile, spawn } from "node:child_process"
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { freePort } from "../support/cli.js"
import { http, runIdOf, waitForRun } from "../support/server.js"

const repository = fileURLToPath(new URL("../../", import.meta.url))

/**
 * The environment without npm's own variables: a nested npm must not inherit the test runner's
 * (nor the Node options the repository's npm settings gave the runner).
 */
const cleanEnv = (): NodeJS.ProcessEnv =>
  Object.fromEntries(
    Object.entries(process.env).filter(([key]) =>
      !key.startsWith("npm_") && key !== "OPENAI_API_KEY" && key !== "INIT_CWD" && key !== "NODE_OPTIONS"
    )
  )

const exec = (command: string, args: ReadonlyArray<string>, cwd: string) =>
  Effect.async<{ readonly code: number; readonly output: string }>((resume) => {
    const child = execFile(command, args, { cwd, env: { ...cleanEnv(), NO_COLOR: "1" }, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) =>
      resume(Effect.succeed({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, output: `${stdout}${stderr}` })))
    return Effect.sync(() => child.kill("SIGKILL"))
  })

const expectSuccess = (result: { readonly code: number; readonly output: string }, what: string) => {
  if (result.code !== 0) throw new Error(`${what} failed (exit ${result.code}):\n${result.output}`)
}

describe("the npm package", () => {
  it.scopedLive("packs, installs into an empty folder, and runs init, a type check, dev and one run", () =>
    Effect.gen(function*() {
      const folder = yield* Effect.acquireRelease(
        Effect.sync(() => mkdtempSync(join(tmpdir(), "foundry-package-"))),
        (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
      )
      // The test's setup has built dist/ (code and declarations); packing must not rebuild it
      // under the other tests that run the binary meanwhile.
      const packed = yield* exec("npm", ["pack", "--ignore-scripts", "--pack-destination", folder], repository)
      expectSuccess(packed, "npm pack")
      const tarball = join(folder, "foundry-0.1.0.tgz")
      expect(existsSync(tarball)).toBe(true)

      const project = join(folder, "project")
      mkdirSync(project)
      writeFileSync(join(project, "package.json"), "{\"name\":\"installer\",\"private\":true}\n")
      // Dependencies come from the registry (through npm's cache). Install scripts are skipped:
      // the only one that matters, better-sqlite3's, compiles SQLite for minutes; its compiled
      // addon (the same version, for this Node) is copied from this checkout instead.
      const installed = yield* exec("npm", ["install", "--ignore-scripts", "--prefer-offline", "--no-audit", "--no-fund", tarball], project)
      expectSuccess(installed, "npm install of the tarball")
      const addon = "better-sqlite3/build/Release/better_sqlite3.node"
      mkdirSync(join(project, "node_modules", addon, ".."), { recursive: true })
      copyFileSync(join(repository, "node_modules", addon), join(project, "node_modules", addon))
      expect(existsSync(join(project, "node_modules/foundry/dist/cli.js"))).toBe(true)
      expect(existsSync(join(project, "node_modules/foundry/src"))).toBe(false)

      const bin = join(project, "node_modules/.bin")
      const init = yield* exec(join(bin, "foundry"), ["init", "app"], project)
      expectSuccess(init, "foundry init")
      const app = join(project, "app")
      for (const file of ["package.json", "tsconfig.json", ".gitignore", "README.md", "agents/assistant/agent.ts"]) {
        expect(existsSync(join(app, file)), file).toBe(true)
      }
      // npm run and npx in the new project start Node with V8's background threads sized to the machine.
      const options = yield* exec("npm", ["exec", "--", "node", "-p", "process.env.NODE_OPTIONS"], app)
      expectSuccess(options, "npm exec in the new project")
      expect(options.output.trim()).toBe("--v8-pool-size=0")
      const appPackage: unknown = JSON.parse(readFileSync(join(app, "package.json"), "utf8"))
      expect(appPackage).toMatchObject({ type: "module", dependencies: { foundry: "file:../../foundry-0.1.0.tgz", effect: expect.any(String) } })

      const types = yield* exec(join(bin, "tsc"), ["--noEmit", "-p", app], project)
      expectSuccess(types, "tsc --noEmit in the new project")

      const port = yield* freePort
      const server = yield* Effect.acquireRelease(
        Effect.sync(() => {
          const child = spawn(join(bin, "foundry"), ["dev", "app", "--port", String(port)], { cwd: project, env: { ...cleanEnv(), NO_COLOR: "1" }, detached: true })
          let output = ""
          child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
          child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
          return { child, output: () => output }
        }),
        // The folder is removed after this. `foundry dev` runs `tsc` as a child process that
        // writes `.foundry/tsbuildinfo`, and a SIGKILL to the server alone would leave it writing
        // while the folder is removed: the server leads its own process group, and the whole
        // group is killed, then awaited.
        ({ child }) =>
          Effect.async<void>((resume) => {
            if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
            child.on("close", () => resume(Effect.void))
            if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL")
          })
      )
      const url = `http://127.0.0.1:${port}`
      for (let attempt = 0; attempt < 300 && !server.output().includes("listening on"); attempt++) yield* Effect.sleep("50 millis")
      expect(server.output()).toContain("listening on")
      expect(server.output()).not.toContain(repository)

      const created = yield* http(`${url}/api/runs`, { body: { agent: "assistant", message: "count the words in \"hello brave new world\"" } })
      expect(created.status).toBe(202)
      const runId = runIdOf(created.json)
      const run = yield* waitForRun(url, runId)
      expect(run.status).toBe("completed")
      expect(run.output).toContain("\"words\":4")
    }), { timeout: 240_000 })
})
