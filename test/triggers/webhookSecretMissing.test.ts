/**
 * A webhook whose secret is a `Config` that cannot be read (its environment variable not set) is
 * refused as a wrong signature (401) to every caller, so that a caller not vouched for cannot tell
 * it from a name no playbook listens on; the owner is told which webhook, which key and how to fix
 * it: when the server starts, and in its log at the first delivery (once, not at every one), and
 * by `foundry check`. Against the built CLI, over HTTP.
 */
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { sign, signedPayload } from "../../src/triggers/webhookSignature.js"
import { bearer, issue } from "../auth/support.js"
import { freePort, runCli, startCli } from "../support/cli.js"
import { http } from "../support/server.js"
import { agentFile, tempProject } from "../support/tempProject.js"

/** An environment variable no test process sets. */
const variable = "FOUNDRY_TEST_TICKETS_SECRET_NOT_SET"

const project = {
  "agents/triage/agent.ts": agentFile(),
  "playbooks/tickets.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import triage from "../agents/triage/agent.js"
export default definePlaybook({ on: webhook("tickets", Schema.Struct({ id: Schema.String })), agent: triage, message: (ticket) => "ticket " + ticket.id })
`,
  "foundry.config.ts": `import { Config } from "effect"
import { defineConfig } from "foundry"
export default defineConfig({ auth: { required: true }, webhooks: { tickets: { secret: Config.redacted("${variable}") } } })
`
}

const body = JSON.stringify({ id: "t-1" })
const said = "webhook tickets: its secret (webhooks.tickets.secret in foundry.config.ts) cannot be read"

describe("a webhook whose secret cannot be read", () => {
  it.scopedLive("answers every caller as a wrong signature, as a name none listens on; the owner is told at start and once in the log", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const port = yield* freePort
      const server = yield* startCli(["start", root, "--port", String(port)])
      yield* server.waitFor(/listening on/)
      const url = `http://127.0.0.1:${port}`
      // Said as the server starts (on stderr: its order among stdout's lines is the pipes').
      const started = server.output()
      expect(started).toContain(said)
      expect(started).toContain(`the environment variable ${variable} is not set`)

      const now = Math.floor(Date.now() / 1000)
      const attempts: ReadonlyArray<Record<string, string>> = [
        {},
        { "x-foundry-signature": sign("a guess", body) },
        { "x-foundry-timestamp": String(now), "x-event-id": "evt-1", "x-foundry-signature": sign("a guess", signedPayload(now, "evt-1", body)) }
      ]
      for (const headers of attempts) {
        const answers = yield* Effect.forEach(["tickets", "nothing"], (name) =>
          Effect.map(http(`${url}/hooks/${name}`, { body, headers }), (answer) => {
            const { _tag, message } = answer.json as { _tag: string; message: string }
            return { status: answer.status, _tag, message }
          }))
        expect(answers[0]).toMatchObject({ status: 401, _tag: "WebhookUnauthorized" })
        expect(answers[1]).toEqual(answers[0])
        expect(answers[0]?.message).not.toContain(variable)
      }
      // A caller that may start runs is refused too: nothing signs with a secret that is not there.
      const runner = yield* issue(join(root, ".foundry/foundry.db"), "run")
      const owner = yield* http(`${url}/hooks/tickets`, { body, headers: bearer(runner.token) })
      expect(owner.status).toBe(401)
      expect(owner.json).toMatchObject({ _tag: "WebhookUnauthorized" })
      // In the log once, for all four deliveries to it, after the one at start.
      yield* server.waitFor(new RegExp(said.replace(/[.()]/g, "\\$&")), started.length)
      const after = server.output().slice(started.length)
      expect(after.split(said).length - 1).toBe(1)
      expect(after).toContain(variable)
      const runs = yield* http(`${url}/api/runs`, { headers: bearer((yield* issue(join(root, ".foundry/foundry.db"), "read")).token) })
      expect(runs.json).toEqual([])
    }))

  it.scopedLive("is warned of by foundry check, which still passes", () =>
    Effect.gen(function*() {
      const result = yield* runCli(["check", yield* tempProject(project)])
      expect(result.code).toBe(0)
      expect(result.stderr + result.stdout).toContain(said)
      expect(result.stderr + result.stdout).toContain(variable)
    }))
})
