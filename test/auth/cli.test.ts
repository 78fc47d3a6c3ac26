import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { runCli, serveProject } from "../support/cli.js"
import { http, startServer } from "../support/server.js"
import { agentFile, tempProject } from "../support/tempProject.js"
import { authProject, bearer, issue } from "./support.js"

/** `foundry <args>` (the built framework, as users run it). */
const foundry = (args: ReadonlyArray<string>) => runCli(args)

describe("foundry token", () => {
  it.scopedLive("create prints the token once, list never shows it, revoke stops it working on a server on the same store", () =>
    Effect.gen(function*() {
      const root = yield* authProject()
      const created = yield* foundry(["token", "create", "--scope", "run", "--name", "ci", "--dir", root])
      expect(created.stderr).toBe("")
      expect(created.code).toBe(0)
      const token = /fdy_[0-9a-f]{16}_[A-Za-z0-9_-]{43}/.exec(created.stdout)?.[0] ?? ""
      const id = token.slice(4, 20)
      expect(created.stdout).toContain(`created token ${id} (scope run, name ci)`)
      expect(created.stdout).toContain("only time the token is shown")
      expect(created.stdout).toContain(`Authorization: Bearer ${token}`)

      const server = yield* startServer(root, { storeFile: join(root, ".foundry/foundry.db") })
      expect((yield* http(`${server.url}/api/runs`, { body: { agent: "echo", message: "hi" }, headers: bearer(token) })).status).toBe(202)

      const listed = yield* foundry(["token", "list", "--dir", root])
      expect(listed.code).toBe(0)
      expect(listed.stdout).toMatch(/ID\s+NAME\s+SCOPE\s+CREATED\s+LAST USED\s+REVOKED/)
      expect(listed.stdout).toMatch(new RegExp(`${id}\\s+ci\\s+run\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d\\s+-`))
      expect(listed.stdout).not.toContain(token.slice(21))

      const revoked = yield* foundry(["token", "revoke", id, "--dir", root])
      expect(revoked.code).toBe(0)
      expect(revoked.stdout).toContain(`revoked token ${id}`)
      expect((yield* http(`${server.url}/api/runs`, { headers: bearer(token) })).status).toBe(401)
      const after = yield* foundry(["token", "list", "--dir", root])
      expect(after.stdout).toMatch(new RegExp(`${id}\\s+ci\\s+run\\s+.*\\d\\d:\\d\\d\\s*$`, "m"))
    }))

  it.scopedLive("create's examples use the address the project's server is reached at: the one serving it, else the config's", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/echo/agent.ts": agentFile(),
        "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ server: { host: "0.0.0.0", port: 4999 }, auth: { required: true } })\n`
      })
      // Nothing serves it: the config's port, on loopback (a server bound to every interface answers there).
      const unserved = yield* foundry(["token", "create", "--scope", "read", "--dir", root])
      expect(unserved.code).toBe(0)
      expect(unserved.stdout).toMatch(/Authorization: Bearer fdy_[\w-]+" http:\/\/127\.0\.0\.1:4999\/api\/runs\n/)
      expect(unserved.stdout).toContain("baseURL = http://127.0.0.1:4999/v1")
      // Served on another port (`foundry start --port`): that server's address.
      const { url } = yield* serveProject(root)
      const served = yield* foundry(["token", "create", "--scope", "read", "--dir", root])
      expect(served.stdout).toContain(`" ${url}/api/runs`)
      expect(served.stdout).toContain(`baseURL = ${url}/v1`)
      expect(served.stdout).not.toMatch(/localhost|:4141|:4999|0\.0\.0\.0/)
    }), 60_000)

  it.scopedLive("a wrong scope, a malformed id and an unknown id each say what is wrong, without a stack trace", () =>
    Effect.gen(function*() {
      const root = yield* authProject()
      const [badScope, badId, unknown] = yield* Effect.all([
        foundry(["token", "create", "--scope", "root", "--dir", root]),
        foundry(["token", "revoke", "nope", "--dir", root]),
        foundry(["token", "revoke", "0123456789abcdef", "--dir", root])
      ], { concurrency: "unbounded" })
      expect(badScope.code).toBe(2)
      expect(badScope.stdout + badScope.stderr).toContain("read, run, deploy, admin")
      expect(badId.code).toBe(1)
      expect(badId.stderr).toContain("nope is not a token id")
      expect(unknown.code).toBe(1)
      expect(unknown.stderr).toContain("there is no token 0123456789abcdef")
      for (const result of [badScope, badId, unknown]) expect(result.stderr).not.toMatch(/\bat .*\.ts:\d+/)
    }))
})

describe("the token a command that asks a server sends", () => {
  it.scopedLive("goes without the line end a token file kept; one a header cannot carry is refused, saying where it came from, not what it is", () =>
    Effect.gen(function*() {
      const root = yield* authProject()
      const { url } = yield* serveProject(root)
      const { token } = yield* issue(join(root, ".foundry/foundry.db"), "read")
      // `--token "$(cat token.txt)"` of a file saved with Windows line ends.
      const kept = yield* foundry(["runs", "--url", url, "--token", `${token}\r`])
      expect(kept.stderr).toBe("")
      expect(kept.code).toBe(0)
      expect(kept.stdout).toContain("no runs")
      const unsendable = yield* foundry(["runs", "--url", url, "--token", `${token}\u20ac`])
      expect(unsendable.code).toBe(1)
      expect(unsendable.stderr).toContain("the token given with --token has a character an HTTP header cannot carry")
      expect(unsendable.stderr).not.toContain(token)
      expect(unsendable.stderr).not.toMatch(/\n\s+at /)
    }))
})
