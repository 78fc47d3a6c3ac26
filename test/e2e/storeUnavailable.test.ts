/**
 * A server whose store stops answering: every request that needs the store gets the API's typed
 * 503, the OpenAPI document declares it, and the server's log keeps what failed. The store is a
 * throwaway PostgreSQL database that is dropped under the running server.
 */
import { randomBytes } from "node:crypto"
import { HttpServer } from "@effect/platform"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, HashMap, Layer, Logger } from "effect"
import { serverLayer } from "../../src/cli/ProjectRuntime.js"
import { loadProject } from "../../src/compiler/loadProject.js"
import { connect, postgresUnavailable, postgresUrl, skipPostgres } from "../support/postgres.js"
import { http } from "../support/server.js"
import { agentFile, tempProject } from "../support/tempProject.js"

/** A new, empty database for this test; dropped (if it still exists) when the scope closes. */
const throwawayDatabase = Effect.gen(function*() {
  if (postgresUnavailable !== undefined) {
    return yield* Effect.die(new Error(`PostgreSQL is required (FOUNDRY_REQUIRE_PG=1) but unavailable: ${postgresUnavailable}`))
  }
  const sql = yield* connect(postgresUrl)
  const name = `foundry_503_${randomBytes(6).toString("hex")}`
  yield* Effect.acquireRelease(
    sql`CREATE DATABASE ${sql(name)}`,
    () => sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`.pipe(Effect.orDie)
  )
  const url = new URL(postgresUrl)
  url.pathname = `/${name}`
  // Drops the database, closing the server's connections to it: from then on the store fails.
  const drop = sql`DROP DATABASE ${sql(name)} WITH (FORCE)`.pipe(Effect.orDie)
  return { name, url: url.toString(), drop }
}).pipe(Effect.orDie)

interface LoggedLine {
  readonly level: string
  readonly message: string
  readonly annotations: Record<string, unknown>
}

/** Starts the project at `root` with its config's store, keeping the server's log lines. */
const startLoggedServer = (root: string) =>
  Effect.gen(function*() {
    const app = yield* loadProject(root, 1)
    const lines: Array<LoggedLine> = []
    const keep = Logger.make<unknown, void>(({ annotations, logLevel, message }) => {
      lines.push({
        level: logLevel.label,
        message: (Array.isArray(message) ? message : [message]).map(String).join(" "),
        annotations: Object.fromEntries(HashMap.toEntries(annotations))
      })
    })
    const context = yield* Layer.build(
      serverLayer(app, { port: 0, host: "127.0.0.1" }).pipe(Layer.provide(Logger.replace(Logger.defaultLogger, keep)))
    )
    const address = Context.get(context, HttpServer.HttpServer).address
    const port = address._tag === "TcpAddress" ? address.port : 0
    return { url: `http://127.0.0.1:${port}`, lines }
  }).pipe(Effect.provide(NodeContext.layer))

describe.skipIf(skipPostgres)("a server whose store becomes unavailable", () => {
  it.scopedLive("answers 503 StoreUnavailable, declared once in the OpenAPI document, and logs the store's failure", () =>
    Effect.gen(function*() {
      const database = yield* throwawayDatabase
      const root = yield* tempProject({
        "foundry.config.ts": `import { defineConfig } from "foundry"
export default defineConfig({ store: { postgres: ${JSON.stringify(database.url)} } })
`,
        "agents/echo/agent.ts": agentFile()
      })
      const server = yield* startLoggedServer(root)
      const before = yield* http(`${server.url}/api/runs`)
      expect(before.status).toBe(200)

      yield* database.drop

      const list = yield* http(`${server.url}/api/runs`)
      const create = yield* http(`${server.url}/api/runs`, { body: { agent: "echo", message: "hello" } })
      const run = yield* http(`${server.url}/api/runs/run_nope`)
      for (const response of [list, create, run]) {
        expect(response.status).toBe(503)
        expect(response.json).toEqual({
          _tag: "StoreUnavailable",
          message: expect.stringContaining("the store could not be reached or used")
        })
        expect(response.text).toContain("can be retried")
        // Nothing of the store's own failure reaches the client: no SQL, database name or stack.
        expect(response.text).not.toMatch(/select|insert|database|foundry_503|postgres|\bat .*\.[jt]s:\d+/i)
      }

      // MCP clients are told the store is unavailable in the same words, and no more of it either.
      for (const call of [
        { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo", arguments: { message: "hello" } } },
        { jsonrpc: "2.0", id: 2, method: "resources/list", params: {} }
      ]) {
        const answered = yield* http(`${server.url}/mcp`, { body: call, headers: { accept: "application/json, text/event-stream" } })
        expect(answered.text).toContain("he store is unavailable; try again")
        expect(answered.text).not.toMatch(/select|insert|database|foundry_503|postgres|\bat .*\.[jt]s:\d+/i)
      }

      // A request the endpoint refuses is still the client's problem, not the store's.
      const malformed = yield* http(`${server.url}/api/runs`, { body: { agent: "echo" } })
      expect(malformed.status).toBe(400)

      const failures = server.lines.filter((line) => line.message.startsWith("the store failed"))
      expect(failures.length).toBeGreaterThanOrEqual(3)
      for (const line of failures) {
        expect(line.level).toBe("ERROR")
        expect(line.annotations["storeOperation"]).toEqual(expect.any(String))
      }

      const openapi = yield* http(`${server.url}/api/openapi.json`)
      expect(openapi.status).toBe(200)
      const declared = { content: { "application/json": { schema: { $ref: "#/components/schemas/StoreUnavailable" } } } }
      expect(openapi.json).toMatchObject({
        components: {
          schemas: { StoreUnavailable: { properties: { _tag: { enum: ["StoreUnavailable"] }, message: { type: "string" } } } }
        },
        paths: { "/api/runs": { get: { responses: { "503": declared } }, post: { responses: { "503": declared } } } }
      })
      // Declared once: one schema, referenced by each endpoint's 503.
      expect(openapi.text.match(/"StoreUnavailable":/g)).toHaveLength(1)
    }))
})
