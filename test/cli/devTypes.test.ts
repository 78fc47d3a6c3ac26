/**
 * Type errors under `foundry dev`: after each build the project is type-checked in the
 * background, and what it finds is printed and served at `GET /api/build` (which the inspector's
 * overview shows), while the build keeps serving.
 */
import { existsSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { checkerOf, ended, niceOf } from "../support/checkProcesses.js"
import { freePort, startCli } from "../support/cli.js"
import { http } from "../support/server.js"
import { agentFile, tempProject } from "../support/tempProject.js"

const clockService = `import { Context, Effect, Layer } from "effect"

export class Clock extends Context.Tag("Clock")<Clock, { readonly now: Effect.Effect<string> }>() {}

export const ClockLive = Layer.succeed(Clock, { now: Effect.succeed("noon") })
`

const tool = (requires: string) => `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
import { Clock } from "../../../lib/clock.js"

export default defineTool({
  description: "Tells the time",
  input: Schema.Struct({}),
  output: Schema.String,
  requires: [${requires}],
  run: () => Effect.flatMap(Clock, (clock) => clock.now)
})
`

interface Build {
  readonly types: { readonly state: string; readonly diagnostics: ReadonlyArray<{ readonly file: string; readonly message: string }> }
}

const isBuild = (value: unknown): value is Build => typeof value === "object" && value !== null && "types" in value

const buildWhen = (url: string, done: (build: Build) => boolean) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 600; attempt++) {
      const response = yield* http(`${url}/api/build`)
      if (isBuild(response.json) && done(response.json)) return response.json
      yield* Effect.sleep("100 millis")
    }
    return yield* Effect.die(new Error("the build status never got there"))
  })

describe("type errors in foundry dev", () => {
  it.scopedLive("a type check runs beneath its foundry dev's priority, and stops, writing nothing into the project, when foundry dev is killed with SIGKILL", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "agents/helper/agent.ts": agentFile() })
      const port = yield* freePort
      const server = yield* startCli(["dev", root, "--port", String(port)])
      const check = yield* checkerOf(root)
      // Lowered by foundry dev once the process exists, so possibly just after it shows up here.
      const beneath = Math.min(niceOf(server.child.pid ?? -1) + 10, 19)
      for (let attempt = 0; attempt < 50 && niceOf(check) < beneath; attempt++) yield* Effect.sleep("20 millis")
      expect(niceOf(check)).toBeGreaterThanOrEqual(beneath)
      server.child.kill("SIGKILL")
      for (let attempt = 0; attempt < 600 && !ended(check); attempt++) yield* Effect.sleep("50 millis")
      expect(ended(check)).toBe(true)
      // A check left to run to its end writes its record once it passes.
      expect(existsSync(join(root, ".foundry/typecheck.json"))).toBe(false)
    }))

  it.scopedLive("a tool that uses a service missing from requires shows up at /api/build and in the terminal after the save", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "lib/clock.ts": clockService,
        "agents/timer/agent.ts": `import { defineAgent } from "foundry"\nimport now from "./tools/now.tool.js"\nexport default defineAgent({ description: "Tells the time", tools: [now] })\n`,
        "agents/timer/tools/now.tool.ts": tool("Clock"),
        "foundry.config.ts": `import { defineConfig } from "foundry"\nimport { ClockLive } from "./lib/clock.js"\nexport default defineConfig({ layers: [ClockLive] })\n`
      })
      const port = yield* freePort
      const server = yield* startCli(["dev", root, "--port", String(port)])
      yield* server.waitFor(/listening on/)
      const url = `http://127.0.0.1:${port}`
      const clean = yield* buildWhen(url, (build) => build.types.state === "ok" || build.types.state === "errors")
      expect(clean.types.state).toBe("ok")

      const from = server.output().length
      writeFileSync(join(root, "agents/timer/tools/now.tool.ts"), tool(""))
      yield* server.waitFor(/reloaded \(build 2\)/, from)
      const broken = yield* buildWhen(url, (build) => build.types.state === "errors")
      expect(broken.types.diagnostics.map((d) => d.file)).toContain("agents/timer/tools/now.tool.ts")
      expect(broken.types.diagnostics.map((d) => d.message).join("\n")).toContain("Clock")
      yield* server.waitFor(/Type errors \(\d+\)[\s\S]*agents\/timer\/tools\/now\.tool\.ts:\d+:\d+/, from)

      // The build still serves, and fixing the file clears the errors.
      expect((yield* http(`${url}/health`)).status).toBe(200)
      const fixing = server.output().length
      writeFileSync(join(root, "agents/timer/tools/now.tool.ts"), tool("Clock"))
      const fixed = yield* buildWhen(url, (build) => build.types.state === "ok")
      expect(fixed.types.diagnostics).toEqual([])
      // The terminal says so too: the last type output on screen is not the old errors.
      yield* server.waitFor(/types: no errors/, fixing)
    }), { timeout: 90_000 })
})
