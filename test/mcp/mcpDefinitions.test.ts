/**
 * Declaring MCP servers: a wrong declaration stops the build naming the file and the field; an
 * agent mounts the config's servers by name; a server that cannot start fails the run saying
 * which server, where it is declared and why.
 */
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { loadProject } from "../../src/compiler/loadProject.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"
import { steppedModel, steps } from "./mcpProject.js"

const load = (root: string) => loadProject(root, 1).pipe(Effect.provide(NodeContext.layer))

const agentWith = (mcp: string) => `import { defineAgent } from "foundry"
export default defineAgent({ description: "Uses MCP", mcp: ${mcp} })
`

const configWith = (fields: string) => `import { Config } from "effect"
import { defineConfig } from "foundry"
export default defineConfig({ ${fields} })
`

describe("declaring MCP servers", () => {
  it.scoped("a wrong server in an agent stops the build, naming the file and each wrong field", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/worker/agent.ts": agentWith(`{ files: { command: "node", timeout: "soon" }, web: { url: "ftp://example.com" }, other: { cmd: "x" } }`)
      })
      const error = yield* Effect.flip(load(root))
      expect(error._tag).toBe("RouteErrors")
      expect(error.message).toContain("agents/worker/agent.ts: mcp is wrong: ")
      const problems = error.message.split("mcp is wrong: ")[1]?.split("\n")[0]?.split("; ")
      expect(problems).toEqual([
        `mcp.files.timeout: expected a duration above zero such as "30 seconds" (or milliseconds as a number), got "soon"`,
        `mcp.web.url: expected an http:// or https:// URL, got "ftp://example.com"`,
        "mcp.other: expected an MCP server: { command, args?, env?, cwd? } (stdio) or { url, headers? } (Streamable HTTP)"
      ])
    }))

  it.scoped("a server name that would be ambiguous in tool names stops the build", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "agents/worker/agent.ts": agentWith(`{ "my__files": { command: "node" } }`) })
      const error = yield* Effect.flip(load(root))
      expect(error.message).toContain(`mcp.my__files: "my__files" is not a server name: use letters, digits, - and _ (no "__")`)
    }))

  it.scoped("a wrong server in the config stops the build, naming the config file and the field", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/worker/agent.ts": agentWith(`{ web: true }`),
        "foundry.config.ts": configWith(`mcp: { web: { url: "https://example.com/mcp", headers: { authorization: 42 } } }`)
      })
      const error = yield* Effect.flip(load(root))
      expect(error.message).toContain("foundry.config.ts")
      expect(error.message).toContain("mcp.web.headers.authorization")
    }))

  it.scoped("an agent naming a server the config does not declare stops the build with the fix", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "agents/worker/agent.ts": agentWith(`{ github: true }`) })
      const error = yield* Effect.flip(load(root))
      expect(error.message).toContain(`agents/worker/agent.ts: mcp.github is true, but foundry.config.ts declares no MCP server named "github"`)
    }))

  it.scoped("an agent mounts its own servers and the config's it names; a stdio server runs in the project folder by default", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/worker/agent.ts": agentWith(`{ files: { command: "node", args: ["server.js"] }, web: true }`),
        "foundry.config.ts": configWith(`mcp: { web: { url: "https://example.com/mcp", headers: { authorization: Config.redacted("TOKEN") }, timeout: "5 seconds", tools: ["search"] } }`)
      })
      const app = yield* load(root)
      const mounts = app.agents.get("worker")?.mcp ?? []
      expect(mounts.map((m) => [m.name, m.declaredIn])).toEqual([["files", "agents/worker/agent.ts"], ["web", "foundry.config.ts"]])
      expect(mounts[1]?.spec).toMatchObject({ url: "https://example.com/mcp", timeout: "5 seconds", tools: ["search"] })
      expect(mounts.every((m) => m.root === root)).toBe(true)
    }))

  it.scopedLive("a server that cannot start fails the run, naming the server, its file and the reason", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "agents/worker/agent.ts": agentWith(`{ broken: { command: "/nonexistent/foundry-mcp-server" } }`) })
      const { model } = steppedModel()
      const { url } = yield* startServer(root, { model })
      const created = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: steps() } })
      const run = yield* waitForRun(url, (created.json as { runId: string }).runId)
      expect(run.status).toBe("failed")
      expect(run.error).toContain("MCP server broken (declared in agents/worker/agent.ts) could not be reached")
      expect(run.error).toContain("ENOENT")
    }))
})
