/**
 * Connecting to an MCP server that is slow or broken while it starts: runs waiting for a server
 * that never answers share one attempt, bounded by `connectTimeout`, and a server whose
 * `tools/list` pages never end is listed in bounded time. Through a real project served over HTTP
 * with a scripted model, against HTTP fixtures on loopback.
 */
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { McpClientsOptions } from "../../src/mcp/McpClients.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"
import { startHttpServer } from "./fixtures/httpServer.js"
import { startSilentHttpServer } from "./fixtures/silentHttpServer.js"
import { authVariable, mcpProject, steppedModel, steps } from "./mcpProject.js"

const token = `secret-${randomUUID()}`

/** The config's header for the `web` server, read from the environment while the test runs. */
const withToken = Effect.acquireRelease(
  Effect.sync(() => {
    process.env[authVariable] = `Bearer ${token}`
  }),
  () => Effect.sync(() => delete process.env[authVariable])
)

/** A project whose agent mounts only the HTTP server at `url`, as `web`, served with the stepped model. */
const serve = (url: string, mcp: Partial<McpClientsOptions> = {}) =>
  Effect.gen(function*() {
    yield* withToken
    const root = yield* tempProject(mcpProject({ log: join(tmpdir(), `foundry-mcp-${randomUUID()}.log`), httpUrl: url, files: false }))
    const { model, offered } = steppedModel()
    const server = yield* startServer(root, { model, mcp })
    return { url: server.url, offered }
  })

const submit = (url: string, message: string) =>
  Effect.map(http(`${url}/api/runs`, { body: { agent: "worker", message } }), (r) => {
    expect(r.status).toBe(202)
    return (r.json as { readonly runId: string }).runId
  })

describe("connecting to an MCP server", () => {
  it.scopedLive("a server that never answers initialize: runs waiting at once share one attempt, bounded by connectTimeout, and all fail as not reached", () =>
    Effect.gen(function*() {
      const silent = yield* startSilentHttpServer()
      const connectTimeout = 2_000
      const { url } = yield* serve(silent.url, { connectTimeout: `${connectTimeout} millis` })
      const started = Date.now()
      const runs = yield* Effect.forEach([1, 2, 3], () => submit(url, steps([{ name: "web__weather", arguments: { city: "Oslo" } }])), {
        concurrency: "unbounded"
      })
      const ended = yield* Effect.forEach(runs, (run) => waitForRun(url, run), { concurrency: "unbounded" })
      const took = Date.now() - started
      for (const run of ended) {
        expect(run.status).toBe("failed")
        expect(run.error).toMatch(/^MCP server web \(declared in .+\) could not be reached: it did not start and list its tools within 2000 millis/)
      }
      // One attempt after another would take three times connectTimeout; one shared, about one.
      expect(took).toBeLessThan(3 * connectTimeout)
      expect(silent.initializes()).toBe(1)
    }))

  it.scopedLive("a server whose tools/list pages never end (the same cursor again, or always a new one) is listed in bounded time, each tool once, and its tools work", () =>
    Effect.gen(function*() {
      const pagings = {
        repeated: () => "x",
        endless: (cursor: string | undefined) => String(Number(cursor ?? "0") + 1)
      }
      for (const [paging, nextCursor] of Object.entries(pagings)) {
        const web = yield* startHttpServer(token, { nextCursor })
        const { offered, url } = yield* serve(web.url)
        const run = yield* submit(url, steps([{ name: "web__weather", arguments: { city: "Oslo" } }]))
        // waitForRun gives up after about ten seconds: before, listing went on for ever.
        expect(yield* waitForRun(url, run), paging).toMatchObject({ status: "completed", output: "done: sunny in Oslo" })
        const names = offered[0]?.tools.map((tool) => tool.name) ?? []
        expect(names.filter((name) => name === "web__weather"), paging).toEqual(["web__weather"])
      }
    }))
})
