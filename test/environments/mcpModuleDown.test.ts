/**
 * An environment whose `defineTools({ mcp })` module's server is down: the session opens anyway,
 * the verbs and scripts that do not need the server work, a script importing the module fails
 * alone saying which module, which server and why, and once the server is back the same script
 * works in the same session. Against the HTTP fixture (a real MCP SDK server on loopback), taken
 * down and brought back on its port.
 */
import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import { defineEnvironment } from "../../src/definitions/defineEnvironment.js"
import { defineTools } from "../../src/definitions/environmentModules.js"
import { SqlEnvironmentStorage } from "../../src/durable/EnvironmentStorage.js"
import * as SqliteDatabase from "../../src/durable/SqliteDatabase.js"
import { Environments, layer as environmentsLayer, type VerbScope } from "../../src/environments/Environments.js"
import { ScriptRunnerLive } from "../../src/environments/script/ScriptRunner.js"
import type { VerbInput, VerbName } from "../../src/environments/verbInputs.js"
import * as McpClients from "../../src/mcp/McpClients.js"
import type { McpMount } from "../../src/mcp/McpMount.js"
import { startHttpServer } from "../mcp/fixtures/httpServer.js"
import { verbScope } from "./support/verbScope.js"

const token = `secret-${randomUUID()}`

const environment = defineEnvironment({
  files: { "/inbox/a.txt": "hello" },
  modules: [defineTools({ name: "forecast", mcp: "web" })]
})

const scopeFor = (url: string, toolCallId: string): VerbScope => {
  const mount: McpMount = { name: "web", spec: { url, headers: { authorization: `Bearer ${token}` } }, declaredIn: "agents/clerk/agent.ts", root: tmpdir() }
  return verbScope(environment, { runId: "r1", toolCallId }, [mount])
}

/** The service over a store file of the test's; MCP servers not reached are tried again after a tenth of a second, then a bit later. */
const environments = Effect.gen(function*() {
  const dir = yield* Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "foundry-env-"))),
    (made) => Effect.sync(() => rmSync(made, { recursive: true, force: true }))
  )
  return yield* Layer.build(
    environmentsLayer().pipe(
      Layer.provideMerge(SqlEnvironmentStorage),
      Layer.provide(ScriptRunnerLive()),
      Layer.provide(McpClients.layer({ restartBase: "100 millis", restartMax: "300 millis" })),
      Layer.provide(SqliteDatabase.layer(join(dir, "foundry.db"))),
      Layer.provide(NodeContext.layer)
    )
  )
})

let calls = 0

/** A verb's answer, or its failure's message, each call a tool call of its own. */
const verb = <K extends VerbName>(url: string, name: K, input: VerbInput<K>) =>
  Effect.flatMap(Environments, (service) => service.verb(scopeFor(url, `call-${++calls}`), name, input)).pipe(
    Effect.either,
    Effect.map((result) => Either.isLeft(result) ? `ERR ${result.left.message}` : result.right)
  )

const plain = `import { readText } from "env:fs"

export default async function () {
  return (await readText("/inbox/a.txt")).toUpperCase()
}
`

const forecast = `import { weather } from "env:forecast"

export default async function () {
  return await weather({ city: "Oslo" })
}
`

describe("a tools module whose MCP server is down", () => {
  it.scopedLive("the environment opens: other verbs and scripts work, a script importing the module fails alone, and works once the server is back", () =>
    Effect.gen(function*() {
      const server = yield* startHttpServer(token)
      yield* server.stop
      const process = yield* environments
      const run = <K extends VerbName>(name: K, input: VerbInput<K>) => Effect.provide(verb(server.url, name, input), process)

      expect(yield* run("read_file", { path: "/inbox/a.txt" })).toContain("hello")
      expect(yield* run("write_file", { path: "/scripts/plain.js", content: plain })).toContain("checks out")
      expect(yield* run("run_script", { path: "/scripts/plain.js" })).toContain("\"HELLO\"")
      // Its names cannot be checked while the server's tools are unknown; it is kept, and checked when it runs.
      expect(yield* run("write_file", { path: "/scripts/forecast.js", content: forecast })).toContain("wrote")
      expect(yield* run("read_file", { path: "/std/forecast/index.d.ts" })).toMatch(/MCP server web .*could not be reached/)

      const failed = yield* run("run_script", { path: "/scripts/forecast.js" })
      expect(failed).toMatch(/^ERR /)
      expect(failed).toMatch(/env:forecast/)
      expect(failed).toMatch(/MCP server web \(declared in agents\/clerk\/agent\.ts\) could not be reached/)
      expect(failed).toMatch(/again/)
      // The scripts that do not need the server still run.
      expect(yield* run("run_script", { path: "/scripts/plain.js" })).toContain("\"HELLO\"")

      yield* server.start
      let answer = ""
      for (let attempt = 0; attempt < 50 && !answer.includes("sunny in Oslo"); attempt++) {
        if (attempt > 0) yield* Effect.sleep("100 millis")
        answer = yield* run("run_script", { path: "/scripts/forecast.js" })
      }
      expect(answer).toContain("sunny in Oslo")
      expect(server.calls).toEqual(["weather"])
      // Its declarations are there now, and a wrong name is refused again as it is written.
      expect(yield* run("read_file", { path: "/std/forecast/index.d.ts" })).toContain("export function weather(")
      expect(yield* run("write_file", { path: "/scripts/wrong.js", content: forecast.replace("{ weather }", "{ wether }") })).toMatch(/did you mean/)
    }), { timeout: 30_000 })
})
