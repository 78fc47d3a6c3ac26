/**
 * A declared MCP server's connection lives as long as the current build mounts it: after a reload
 * or a deploy that changes or removes the server, the old connection (a stdio server's process) is
 * closed once idle, and the current one stays open however long it is idle.
 */
import { existsSync, readFileSync } from "node:fs"
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { runtimeLayer } from "../../src/cli/ProjectRuntime.js"
import { CurrentApp } from "../../src/compiler/CurrentApp.js"
import type { CompiledApp } from "../../src/compiler/CompiledApp.js"
import { loadProject } from "../../src/compiler/loadProject.js"
import { McpClients } from "../../src/mcp/McpClients.js"
import { tempProject } from "../support/tempProject.js"
import { mcpProject } from "./mcpProject.js"

/** The pid the stdio fixture logged as it started. */
const startedPid = (log: string): number | undefined => {
  const line = existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").at(-1) : undefined
  return line === undefined || line === "" ? undefined : Number(line.replace("started ", ""))
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const eventually = (what: string, check: () => boolean) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 400 && !check(); attempt++) yield* Effect.sleep("25 millis")
    if (!check()) return yield* Effect.die(new Error(`never happened: ${what}`))
  })

/** The project's `files` server as its `worker` agent mounts it. */
const filesMount = (app: CompiledApp) => {
  const mount = app.agents.get("worker")?.mcp[0]
  if (mount === undefined) throw new Error("the project's worker mounts no MCP server")
  return mount
}

describe("declared MCP servers across builds", () => {
  it.scopedLive("a server the current build no longer mounts is stopped once idle; the one it mounts stays", () =>
    Effect.gen(function*() {
      const logs = [join(tmpdir(), `foundry-mcp-${randomUUID()}.log`), join(tmpdir(), `foundry-mcp-${randomUUID()}.log`)] as const
      const root = yield* tempProject(mcpProject({ log: logs[0] }))
      const before = yield* loadProject(root, 1)
      const after = yield* loadProject(yield* tempProject(mcpProject({ log: logs[1] })), 2)
      const context = yield* Layer.build(
        runtimeLayer(before, { storeFile: join(root, "foundry.db"), mcp: { idleTimeout: "200 millis" } })
      )
      const clients = Context.get(context, McpClients)

      expect(yield* clients.tools(filesMount(before))).not.toEqual([])
      const first = startedPid(logs[0])!
      expect(alive(first)).toBe(true)

      // A reload to a build whose server is another (here: its log differs; a new command alike).
      yield* Context.get(context, CurrentApp).set(after)
      expect(yield* clients.tools(filesMount(after))).not.toEqual([])
      const second = startedPid(logs[1])!

      yield* eventually(`the server of the build before (pid ${first}) stopped`, () => !alive(first))
      // Idle for many times the timeout, and still mounted by the current build: still running.
      yield* Effect.sleep("1 second")
      expect(alive(second)).toBe(true)
    }).pipe(Effect.provide(NodeContext.layer)))
})
