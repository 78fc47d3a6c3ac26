import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { runCli } from "../support/cli.js"
import { connect, freshSchema, skipPostgres } from "../support/postgres.js"
import { agentFile, tempProject, toolFile } from "../support/tempProject.js"

describe.skipIf(skipPostgres)("a project whose config selects PostgreSQL", () => {
  it.scopedLive("stores its runs, messages and events in PostgreSQL", () =>
    Effect.gen(function*() {
      const url = yield* freshSchema
      const root = yield* tempProject({
        "foundry.config.ts": `import { defineConfig } from "foundry"
export default defineConfig({ store: { postgres: ${JSON.stringify(url)} } })
`,
        "agents/echo/agent.ts": agentFile({ tools: ["echo"], imports: `import echo from "./tools/echo.tool.js"` }),
        "agents/echo/tools/echo.tool.ts": toolFile()
      })
      const result = yield* runCli(["run", "echo", `echo "hello postgres"`, "--dir", root])
      expect(result.stderr).not.toContain("error")
      expect(result.code).toBe(0)
      expect(result.stdout).toContain("hello postgres")
      const sql = yield* connect(url)
      const runs = yield* sql<{ readonly agent: string; readonly status: string }>`SELECT agent, status FROM foundry_runs`
      expect(runs).toEqual([{ agent: "echo", status: "completed" }])
      const events = yield* sql<{ readonly count: string }>`SELECT COUNT(*) AS count FROM foundry_events`
      expect(Number(events[0]?.count)).toBeGreaterThan(5)
      const messages = yield* sql<{ readonly count: string }>`SELECT COUNT(*) AS count FROM foundry_messages`
      expect(Number(messages[0]?.count)).toBe(4)
    }))
})
