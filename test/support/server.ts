/**
 * Starts a project's real HTTP server in the test's scope, on a free loopback port, with its
 * store in a temporary file and (optionally) every agent on a given model.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { HttpServer } from "@effect/platform"
import { NodeContext } from "@effect/platform-node"
import { Context, Effect, Layer } from "effect"
import { type RuntimeOptions, serverLayer } from "../../src/cli/ProjectRuntime.js"
import { loadProject } from "../../src/compiler/loadProject.js"
import type { LanguageModel, ModelResolver } from "../../src/models/Model.js"
import { layerFixed } from "../../src/models/ModelResolverLive.js"

/** A running test server. */
export interface TestServer {
  readonly url: string
  readonly storeFile: string
}

/** Serves the project at `root` with `options` until the scope closes; the result is its base URL. */
const serve = (root: string, options: RuntimeOptions) =>
  Effect.gen(function*() {
    const app = yield* loadProject(root, 1)
    const context = yield* Layer.build(serverLayer(app, { port: 0, host: "127.0.0.1" }, options))
    const address = Context.get(context, HttpServer.HttpServer).address
    return `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`
  }).pipe(Effect.provide(NodeContext.layer))

/** Starts the project at `root`; everything stops when the scope closes. */
export const startServer = (
  root: string,
  options: {
    readonly model?: LanguageModel
    readonly models?: Layer.Layer<ModelResolver>
    readonly storeFile?: string
    readonly mcp?: RuntimeOptions["mcp"]
  } = {}
) =>
  Effect.gen(function*() {
    const storeFile = options.storeFile ?? join(mkdtempSync(join(tmpdir(), "foundry-store-")), "foundry.db")
    const url = yield* serve(root, {
      storeFile,
      ...(options.mcp === undefined ? {} : { mcp: options.mcp }),
      ...(options.models !== undefined ? { models: options.models } : options.model === undefined ? {} : { models: layerFixed(options.model) })
    })
    const server: TestServer = { url, storeFile }
    return server
  })

/** Starts the project at `root` on the store its config names, every agent on `model`; the result is its base URL. */
export const startServerOnItsStore = (root: string, model: LanguageModel) => serve(root, { models: layerFixed(model) })

/** JSON over HTTP with `fetch`. */
export const http = (url: string, init: { readonly method?: string; readonly body?: unknown; readonly headers?: Record<string, string> } = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, {
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      headers: { "content-type": "application/json", ...init.headers },
      ...(init.body === undefined ? {} : { body: typeof init.body === "string" ? init.body : JSON.stringify(init.body) })
    })
    const text = await response.text()
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    return { status: response.status, text, json, headers: response.headers }
  })

/** The run id in the answer to `POST /api/runs`, or "" when there is none. */
export const runIdOf = (created: unknown): string =>
  typeof created === "object" && created !== null && "runId" in created ? String(created.runId) : ""

/** A run as `GET /api/runs/:runId` returns it. */
export interface RunBody {
  readonly status: string
  readonly output?: string
  readonly error?: string
  readonly [field: string]: unknown
}

const isRunBody = (body: unknown): body is RunBody =>
  typeof body === "object" && body !== null && "status" in body && typeof body.status === "string"

/** Every tool call's result among the run's events, in order, as `<tool>: <output or error>`. */
export const toolResults = (base: string, runId: string) =>
  Effect.map(http(`${base}/api/runs/${runId}/events`), (response) => {
    const events: unknown = response.json
    return (Array.isArray(events) ? events : [])
      .filter((event: { type?: string }) => event.type === "tool.call.completed" || event.type === "tool.call.failed")
      .map((event: { data?: { tool?: string; output?: unknown; error?: unknown } }) => `${event.data?.tool}: ${String(event.data?.output ?? event.data?.error)}`)
  })

/** Polls a run until it has ended (or the `attempts`, 25 ms apart, run out). */
export const waitForRun = (base: string, runId: string, attempts = 400) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < attempts; attempt++) {
      const response = yield* http(`${base}/api/runs/${runId}`)
      const body = response.json
      if (isRunBody(body) && (body.status === "completed" || body.status === "failed" || body.status === "cancelled")) {
        return body
      }
      yield* Effect.sleep("25 millis")
    }
    return yield* Effect.die(new Error(`run ${runId} did not end`))
  })

/** Polls until the run waits on an approval (or 200 tries, 25 ms apart, run out), and returns the approval's id. */
export const pendingApproval = (url: string, runId: string) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 200; attempt++) {
      const run = (yield* http(`${url}/api/runs/${runId}`)).json
      if (isRunBody(run) && run.status === "suspended") {
        const pending = (yield* http(`${url}/api/approvals?status=pending&run=${runId}`)).json as ReadonlyArray<{ id: string; runId: string }>
        const approval = pending[0]
        if (approval !== undefined) return approval.id
      }
      yield* Effect.sleep("25 millis")
    }
    return yield* Effect.die(new Error(`run ${runId} never waited on an approval`))
  })
