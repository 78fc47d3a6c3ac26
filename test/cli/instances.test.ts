/**
 * `foundry instances`, `foundry install` and `foundry uninstall`: the real binary against a running
 * server, found through the project's config or `--url`, with a token from `--token` or
 * `FOUNDRY_TOKEN`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { issue } from "../auth/support.js"
import { freePort, runCli, startCli } from "../support/cli.js"
import { http, startServer } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const project = (config = "{}", more: Record<string, string> = {}) =>
  tempProject({
    ...more,
    "agents/desk/agent.ts": `import { Schema } from "effect"
import { defineAgent } from "foundry"
export default defineAgent({ description: "A help desk", context: Schema.Struct({ company: Schema.String }) })
`,
    "tools/crm.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
export default defineTool({
  description: "Reads the customer's CRM",
  input: Schema.Struct({}),
  output: Schema.String,
  installable: { config: Schema.Struct({ url: Schema.String, apiKey: Schema.Redacted(Schema.String), retries: Schema.optional(Schema.Number) }) },
  run: (_input, { config }) => Effect.succeed(config.url)
})
`,
    "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig(${config})\n`
  })

const createInstance = (url: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const created = yield* http(`${url}/api/instances`, { body: { agent: "desk", ...body }, headers })
    expect(created.status, created.text).toBe(201)
  })

/** The rows of a printed table: its cells split on runs of two or more spaces. */
const rowsOf = (stdout: string) => stdout.trim().split("\n").map((line) => line.trim().split(/ {2,}/))

describe("foundry instances", () => {
  it.scopedLive("lists a running server's instances as a table, found through the project's config; --all pages through every one", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const root = yield* project(`{ server: { port: ${port} } }`)
      const server = yield* startCli(["start", root])
      yield* server.waitFor(/listening on/)
      const url = `http://127.0.0.1:${port}`
      yield* createInstance(url, { id: "acme", provisioningKey: "customer-7", context: { company: "Acme" } })
      yield* createInstance(url, {
        id: "globex",
        context: { company: "Globex" },
        installations: [{ kind: "tool", id: "crm", config: { url: "https://crm.globex.test", apiKey: "sk-globex" } }]
      })

      const listed = yield* runCli(["instances", "--dir", root])
      expect(listed.stderr).toBe("")
      expect(listed.code).toBe(0)
      const [header, ...rows] = rowsOf(listed.stdout)
      expect(header).toEqual(["ID", "AGENT", "KEY", "STATUS", "INSTALLED", "UPDATED"])
      expect(rows.map((row) => row.slice(0, 5))).toEqual([["acme", "desk", "customer-7", "active", "0"], ["globex", "desk", "-", "active", "1"]])
      expect(rows[0]?.[5]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d$/)
      // The columns line up: every row's STATUS starts where the header's does.
      const lines = listed.stdout.trim().split("\n")
      for (const line of lines.slice(1)) expect(line.indexOf("active")).toBe(lines[0]!.indexOf("STATUS"))

      const searched = yield* runCli(["instances", "--dir", root, "--search", "CUSTOMER"])
      expect(rowsOf(searched.stdout).slice(1).map((row) => row[0])).toEqual(["acme"])
      const none = yield* runCli(["instances", "--dir", root, "--agent", "desk", "--search", "zzz"])
      expect([none.code, none.stdout.trim()]).toEqual([0, "no instances match"])
      const typo = yield* runCli(["instances", "--dir", root, "--agent", "dsek"])
      expect(typo.code).toBe(1)
      expect(typo.stderr).toContain(`there is no agent "dsek"; did you mean "desk"? (the agents: desk)`)

      for (let i = 0; i < 55; i++) yield* createInstance(url, { id: `bulk-${String(i).padStart(2, "0")}`, context: { company: `Bulk ${i}` } })
      const firstPage = yield* runCli(["instances", "--dir", root])
      expect(firstPage.code).toBe(0)
      const firstRows = rowsOf(firstPage.stdout).filter((row) => row[1] === "desk")
      expect(firstRows).toHaveLength(50)
      expect(firstPage.stdout).toContain("--all lists every one")
      const all = yield* runCli(["instances", "--dir", root, "--all"])
      expect(rowsOf(all.stdout).filter((row) => row[1] === "desk")).toHaveLength(57)
      expect(all.stdout).not.toContain("--all lists every one")
    }))

  it.scopedLive("with no server there, it says so in one line and exits non-zero", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const root = yield* project(`{ server: { port: ${port} } }`)
      const result = yield* runCli(["instances", "--dir", root])
      expect(result.code).not.toBe(0)
      expect(result.stdout).toBe("")
      expect(result.stderr).toContain(`no Foundry server at http://127.0.0.1:${port}: start one with \`foundry dev\`, or pass --url`)
      expect(result.stderr).not.toMatch(/\n\s+at /)
      const elsewhere = yield* runCli(["install", "acme", "tool:crm", "--url", `http://127.0.0.1:${port}/`])
      expect(elsewhere.code).not.toBe(0)
      expect(elsewhere.stderr).toContain(`no Foundry server at http://127.0.0.1:${port}: start one`)
    }))

  it.scopedLive("finds the project's server started with --port, not only the config's; once it is gone, the config's again", () =>
    Effect.gen(function*() {
      const configured = yield* freePort
      const root = yield* project(`{ server: { port: ${configured} } }`)
      const port = yield* freePort
      const server = yield* startCli(["dev", root, "--port", String(port)])
      yield* server.waitFor(/listening on/)
      yield* createInstance(`http://127.0.0.1:${port}`, { id: "acme", context: { company: "Acme" } })
      const listed = yield* runCli(["instances", "--dir", root])
      expect(listed.stderr).toBe("")
      expect(rowsOf(listed.stdout)[1]?.[0]).toBe("acme")

      // Killed without a chance to tidy up: its record is of a process that is no more.
      server.child.kill("SIGKILL")
      yield* Effect.async<void>((resume) => {
        if (server.child.exitCode !== null || server.child.signalCode !== null) return resume(Effect.void)
        server.child.on("close", () => resume(Effect.void))
      })
      const gone = yield* runCli(["instances", "--dir", root])
      expect(gone.code).not.toBe(0)
      expect(gone.stderr).toContain(`no Foundry server at http://127.0.0.1:${configured}`)
    }))

  it.scopedLive("sends the token from --token or FOUNDRY_TOKEN; without one, it prints the server's refusal", () =>
    Effect.gen(function*() {
      const root = yield* project(`{ auth: { required: true } }`)
      const server = yield* startServer(root)
      const admin = (yield* issue(server.storeFile, "admin")).token
      yield* createInstance(server.url, { id: "acme", context: { company: "Acme" } }, { authorization: `Bearer ${admin}` })

      const refused = yield* runCli(["instances", "--url", server.url])
      expect(refused.code).not.toBe(0)
      expect(refused.stderr).toContain("this server needs an API token")
      expect(refused.stderr).toContain("no token was sent: pass --token <token>, or set FOUNDRY_TOKEN")
      expect(refused.stderr).not.toMatch(/\n\s+at /)
      const withFlag = yield* runCli(["instances", "--url", server.url, "--token", admin])
      expect(withFlag.code).toBe(0)
      expect(withFlag.stdout).toMatch(/^acme\s+desk/m)
      const fromEnv = yield* startCli(["instances", "--url", server.url], { env: { FOUNDRY_TOKEN: admin } })
      yield* fromEnv.waitFor(/^acme\s+desk/m)
    }))
})

describe("foundry instances create, show, context, pause, resume and archive", () => {
  it.scopedLive("make and change one instance of a running server, printing what the server answered; a wrong context is each wrong field", () =>
    Effect.gen(function*() {
      const root = yield* project()
      const server = yield* startServer(root)
      const on = ["--url", server.url]
      const status = (id: string) => Effect.map(http(`${server.url}/api/instances/${id}`), (r) => r.json as { status: string; statusReason: string | null; context: unknown })
      writeFileSync(join(root, "acme.json"), JSON.stringify({ company: "Acme" }))
      writeFileSync(join(root, "renamed.json"), JSON.stringify({ company: "Acme Corp" }))
      writeFileSync(join(root, "wrong.json"), JSON.stringify({ company: 7 }))

      const created = yield* runCli(["instances", "create", "desk", "--id", "acme", "--key", "cus-1", "--context", join(root, "acme.json"), ...on])
      expect(created.stderr).toBe("")
      expect(created.code).toBe(0)
      expect(created.stdout).toContain("created instance acme of agent desk")
      expect(created.stdout).toMatch(/"company": "Acme"/)
      expect((yield* status("acme")).context).toEqual({ company: "Acme" })
      const again = yield* runCli(["instances", "create", "desk", "--key", "cus-1", "--context", join(root, "acme.json"), ...on])
      expect(again.code).toBe(0)
      expect(again.stdout).toContain("instance acme of agent desk has key cus-1 already; nothing changed")
      const shown = yield* runCli(["instances", "show", "acme", ...on])
      expect(shown.code).toBe(0)
      expect(shown.stdout).toMatch(/acme.* of agent desk: active/)
      expect(shown.stdout).toContain("key:      cus-1")

      const wrong = yield* runCli(["instances", "context", "acme", join(root, "wrong.json"), ...on])
      expect(wrong.code).toBe(1)
      expect(wrong.stderr).toMatch(/company/)
      expect(wrong.stderr).not.toMatch(/\n\s+at /)
      expect((yield* status("acme")).context).toEqual({ company: "Acme" })
      const renamed = yield* runCli(["instances", "context", "acme", join(root, "renamed.json"), ...on])
      expect([renamed.code, renamed.stderr]).toEqual([0, ""])
      expect((yield* status("acme")).context).toEqual({ company: "Acme Corp" })

      // Every way on a refusal suggests is said as the command that takes it, not as the API's call.
      const taken = yield* runCli(["instances", "create", "desk", "--id", "acme", "--context", join(root, "acme.json"), ...on])
      expect(taken.code).toBe(1)
      expect(taken.stderr).toContain(`; change it with foundry instances context acme <context.json> --agent desk, or create another`)
      expect(taken.stderr).not.toContain("/api/")
      const nobody = yield* runCli(["instances", "pause", "nobody", "--agent", "desk", ...on])
      expect(nobody.code).toBe(1)
      expect(nobody.stderr).toContain(`agent "desk" has no instance "nobody"; list them with foundry instances --agent desk`)
      expect(nobody.stderr).not.toContain("/api/")

      const paused = yield* runCli(["instances", "pause", "acme", "--reason", "invoice unpaid", ...on])
      expect(paused.code).toBe(0)
      expect(paused.stdout).toContain("paused instance acme of agent desk")
      expect(yield* status("acme")).toMatchObject({ status: "paused", statusReason: "invoice unpaid" })
      const refused = yield* http(`${server.url}/api/runs`, { body: { agent: "desk", instance: "acme", message: "hello" } })
      expect(refused.status).toBe(409)
      const resumed = yield* runCli(["instances", "resume", "acme", ...on])
      expect(resumed.code).toBe(0)
      expect((yield* status("acme")).status).toBe("active")

      const archived = yield* runCli(["instances", "archive", "acme", "--reason", "contract ended", ...on])
      expect(archived.code).toBe(0)
      expect(archived.stdout).toContain("archived instance acme of agent desk")
      expect(yield* status("acme")).toMatchObject({ status: "archived", statusReason: "contract ended" })
      const missing = yield* runCli(["instances", "show", "nobody", ...on])
      expect(missing.code).toBe(1)
      // The way on is said as the command that takes it, not as the API's call.
      expect(missing.stderr).toContain(`no agent has an instance "nobody"; list them with foundry instances --search nobody`)
      expect(missing.stderr).not.toContain("/api/")
      // The list is still the command itself.
      const listed = yield* runCli(["instances", ...on])
      expect(rowsOf(listed.stdout)[1]?.slice(0, 4)).toEqual(["acme", "desk", "cus-1", "archived"])
    }))
})

describe("foundry run on a paused instance", () => {
  it.scopedLive("is refused, and the refusal says the command that resumes the instance", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const root = yield* project(`{ server: { port: ${port} } }`)
      const server = yield* startCli(["start", root])
      yield* server.waitFor(/listening on/)
      yield* createInstance(`http://127.0.0.1:${port}`, { id: "acme", context: { company: "Acme" } })
      expect((yield* runCli(["instances", "pause", "acme", "--dir", root])).code).toBe(0)

      // `foundry run` works on the project's store itself: the runtime's refusal, not the server's.
      const refused = yield* runCli(["run", "desk", "hello", "--instance", "acme", "--dir", root])
      expect(refused.code).toBe(1)
      expect(refused.stderr).toContain("it takes no new runs until it is resumed (foundry instances resume acme --agent desk)")
      expect(refused.stderr).not.toContain("/api/")
    }))
})

describe("foundry install and uninstall", () => {
  it.scopedLive("install with a good config prints what the server installed, its secrets redacted; uninstall removes it", () =>
    Effect.gen(function*() {
      const root = yield* project()
      const server = yield* startServer(root)
      yield* createInstance(server.url, { id: "acme", context: { company: "Acme" } })
      const config = join(root, "crm.json")
      writeFileSync(config, JSON.stringify({ url: "https://crm.acme.test", apiKey: "sk-acme-very-secret", retries: 3 }))

      // A bare id, when one capability has it.
      const installed = yield* runCli(["install", "acme", "crm", "--config", config, "--url", server.url])
      expect(installed.stderr).toBe("")
      expect(installed.code).toBe(0)
      expect(installed.stdout).toContain("installed tool crm on instance acme")
      expect(installed.stdout).toContain(`"url": "https://crm.acme.test"`)
      expect(installed.stdout).toContain(`"apiKey": "<redacted>"`)
      expect(installed.stdout).toContain(`"retries": 3`)
      expect(installed.stdout).not.toContain("sk-acme-very-secret")
      const view = (yield* http(`${server.url}/api/instances/acme?agent=desk`)).json as { installations: Array<{ kind: string; id: string }> }
      expect(view.installations).toMatchObject([{ kind: "tool", id: "crm" }])

      const removed = yield* runCli(["uninstall", "acme", "tool:crm", "--agent", "desk", "--url", server.url])
      expect(removed.code).toBe(0)
      expect(removed.stdout).toContain("uninstalled tool crm from instance acme")
      expect(((yield* http(`${server.url}/api/instances/acme?agent=desk`)).json as typeof view).installations).toEqual([])
    }))

  it.scopedLive("install with a bad config exits non-zero and prints each wrong field on its own line", () =>
    Effect.gen(function*() {
      const root = yield* project()
      const server = yield* startServer(root)
      yield* createInstance(server.url, { id: "acme", context: { company: "Acme" } })
      const config = join(root, "crm.json")
      writeFileSync(config, JSON.stringify({ url: 42, retries: "three", extra: true }))

      const result = yield* runCli(["install", "acme", "tool:crm", "--config", config, "--url", server.url])
      expect(result.code).not.toBe(0)
      expect(result.stdout).toBe("")
      const lines = result.stderr.split("\n").map((line) => line.trim())
      for (const field of ["url", "apiKey", "retries", "extra"]) {
        expect(lines.filter((line) => new RegExp(`^(config\\.)?${field}: `).test(line)), result.stderr).toHaveLength(1)
      }
      expect(result.stderr).not.toMatch(/\n\s+at /)
      expect(((yield* http(`${server.url}/api/instances/acme?agent=desk`)).json as { installations: Array<unknown> }).installations).toEqual([])

      const unknown = yield* runCli(["install", "acme", "billing", "--config", config, "--url", server.url])
      expect(unknown.code).not.toBe(0)
      expect(unknown.stderr).toContain(`there is no installable capability "billing"; installable: tool:crm`)
      const notJson = join(root, "broken.json")
      writeFileSync(notJson, "{ url: ")
      const broken = yield* runCli(["install", "acme", "tool:crm", "--config", notJson, "--url", server.url])
      expect(broken.code).not.toBe(0)
      expect(broken.stderr).toContain(`${notJson} is not JSON`)
      const missing = yield* runCli(["install", "nobody", "tool:crm", "--config", config, "--url", server.url, "--agent", "desk"])
      expect(missing.code).not.toBe(0)
      expect(missing.stderr).toContain(`agent "desk" has no instance "nobody"`)
    }))

  it.scopedLive("an instance id two agents have: install and uninstall say once, in the command's terms, to pass --agent", () =>
    Effect.gen(function*() {
      const root = yield* project("{}", {
        "agents/lead/agent.ts": `import { defineAgent } from "foundry"\nexport default defineAgent({ description: "Sales leads" })\n`
      })
      const server = yield* startServer(root)
      yield* createInstance(server.url, { id: "acme", context: { company: "Acme" } })
      yield* createInstance(server.url, { agent: "lead", id: "acme" })
      const config = join(root, "crm.json")
      writeFileSync(config, JSON.stringify({ url: "https://crm.acme.test", apiKey: "sk-acme" }))

      for (const command of [["install", "acme", "tool:crm", "--config", config], ["uninstall", "acme", "tool:crm"]]) {
        const result = yield* runCli([...command, "--url", server.url])
        expect(result.code).toBe(1)
        const said = result.stderr.split("\n").map((line) => line.trim()).filter((line) => line.includes("each have an instance"))
        expect(said, result.stderr).toEqual([`--agent: agents "desk", "lead" each have an instance "acme": say which`])
        expect(result.stderr).not.toContain("?agent=")
      }
      const installed = yield* runCli(["install", "acme", "tool:crm", "--config", config, "--agent", "lead", "--url", server.url])
      expect(installed.stderr).toBe("")
      expect(installed.stdout).toContain("installed tool crm on instance acme")
    }))
})
