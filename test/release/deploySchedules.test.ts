/**
 * Schedules follow the current release: a deploy that removes a schedule cancels its activation,
 * a rollback to the release that has it brings it back, and deploying the current release again
 * syncs its schedules (a deploy that stopped after its switch is finished so).
 */
import { rmSync } from "node:fs"
import Database from "better-sqlite3"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { bearer } from "../auth/support.js"
import { http } from "../support/server.js"
import { agentFile, tempProject } from "../support/tempProject.js"
import { build, deploy, emptyServerProject, startServer, tokensFor, uploadOf } from "./deploySupport.js"

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

const scheduleIds = (body: unknown): ReadonlyArray<string> =>
  Array.isArray(body) ? body.flatMap((entry) => isRecord(entry) && typeof entry.id === "string" ? [entry.id] : []) : []

const removedSchedules = (body: unknown): unknown =>
  isRecord(body) && isRecord(body.summary) && isRecord(body.summary.schedules) ? body.summary.schedules.removed : undefined

describe("deploy and schedules", () => {
  it.scopedLive("a deploy that removes a schedule cancels it; a rollback brings it back", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/desk/agent.ts": agentFile(),
        "schedules/nightly.ts": `import { defineSchedule } from "foundry"
import desk from "../agents/desk/agent.js"
export default defineSchedule({ agent: desk, every: "1 hour", message: "nightly review" })
`,
        "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ auth: { required: true } })\n`
      })
      const v1 = yield* build(root)
      rmSync(join(root, "schedules/nightly.ts"))
      const v2 = yield* build(root)

      const server = yield* emptyServerProject
      const tokens = yield* tokensFor(server)
      const { url } = yield* startServer([server])
      const schedules = Effect.map(http(`${url}/api/schedules`, { headers: bearer(tokens.read.token) }), (response) => scheduleIds(response.json))

      expect((yield* deploy(url, tokens.deploy.token, uploadOf(v1.folder))).status).toBe(200)
      expect(yield* schedules).toEqual(["nightly"])

      const second = yield* deploy(url, tokens.deploy.token, uploadOf(v2.folder))
      expect(second.status).toBe(200)
      expect(removedSchedules(second.json)).toEqual(["nightly"])
      expect(yield* schedules).toEqual([])

      const back = yield* http(`${url}/api/releases/${v1.id}/activate`, { method: "POST", headers: bearer(tokens.deploy.token) })
      expect(back.status).toBe(200)
      expect(yield* schedules).toEqual(["nightly"])

      // A deploy that stopped after its switch, before its schedules were synced (the store failed
      // the sync, the server died): the release is current, its schedule is not there. Deployed
      // again, it switches nothing and syncs them.
      const store = new Database(join(server, ".foundry/foundry.db"))
      try {
        store.prepare("DELETE FROM foundry_activations WHERE kind = 'schedule'").run()
      } finally {
        store.close()
      }
      expect(yield* schedules).toEqual([])
      const again = yield* deploy(url, tokens.deploy.token, uploadOf(v1.folder))
      expect(again.status).toBe(200)
      expect(again.json).toMatchObject({ switched: false })
      expect(yield* schedules).toEqual(["nightly"])
    }))
})
