/**
 * The project and model of the MCP client tests: an agent `worker` that mounts the stdio fixture
 * server as `files` (and, given a URL, the config's Streamable HTTP server as `web`), and a
 * scripted model that reads its steps from the run's message and keeps the tools it was offered.
 */
import { fileURLToPath } from "node:url"
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import * as Scripted from "../../src/models/scripted.js"
import type { ChatMessage, ToolSpec } from "../../src/models/Model.js"
import type { ProjectFiles } from "../support/tempProject.js"

const repoRoot = fileURLToPath(new URL("../..", import.meta.url))
const stdioFixture = fileURLToPath(new URL("fixtures/stdioServer.ts", import.meta.url))

/** The environment variable the config reads the HTTP server's `authorization` header from. */
export const authVariable = "FOUNDRY_TEST_MCP_AUTH"

/** The project's files. */
export const mcpProject = (options: {
  /** The file the stdio server appends `started <pid>` to. */
  readonly log: string
  /** The HTTP server's URL: mounted as `web` from the config when given. */
  readonly httpUrl?: string
  /** More fields of the `files` server, as source text (e.g. `timeout: "500 millis"`); `false`: no `files` server. */
  readonly files?: string | false
  /** More fields of the config, as source text. */
  readonly config?: string
  /** More tools the stdio server lists (`FIXTURE_TOOLS`). */
  readonly fixtureTools?: ReadonlyArray<Tool>
  /** What else it lists as it is, tools as MCP defines them or not (`FIXTURE_RAW_TOOLS`). */
  readonly rawFixtureTools?: ReadonlyArray<unknown>
}): ProjectFiles => ({
  "agents/worker/agent.ts": `import { defineAgent } from "foundry"

export default defineAgent({
  description: "Works with MCP tools",
  maxTurns: 10,
  mcp: {
    ${options.files === false ? "" : `files: {
      command: ${JSON.stringify(process.execPath)},
      args: ["--import", "tsx", ${JSON.stringify(stdioFixture)}],
      cwd: ${JSON.stringify(repoRoot)},
      env: { FIXTURE_LOG: ${JSON.stringify(options.log)}${
    options.fixtureTools === undefined ? "" : `, FIXTURE_TOOLS: ${JSON.stringify(JSON.stringify(options.fixtureTools))}`
  }${options.rawFixtureTools === undefined ? "" : `, FIXTURE_RAW_TOOLS: ${JSON.stringify(JSON.stringify(options.rawFixtureTools))}`} },
      ${options.files ?? ""}
    },`}
    ${options.httpUrl === undefined ? "" : "web: true"}
  }
})
`,
  "foundry.config.ts": `import { Config } from "effect"
import { defineConfig } from "foundry"

export default defineConfig({
  ${options.httpUrl === undefined ? "" : `mcp: { web: { url: ${JSON.stringify(options.httpUrl)}, headers: { authorization: Config.redacted(${JSON.stringify(authVariable)}) } } },`}
  ${options.config ?? ""}
})
`
})

/** One tool call the model makes. */
export interface Call {
  readonly name: string
  readonly arguments: unknown
}

/** A run's message: the calls of each model turn, in order; then the model answers `done: <results>`. */
export const steps = (...turns: ReadonlyArray<ReadonlyArray<Call>>): string => JSON.stringify(turns)

const isTurns = (value: unknown): value is ReadonlyArray<ReadonlyArray<Call>> => Array.isArray(value)

/** The stepped model (one that sees images when `vision`), the tools it was offered on each turn it took, and the messages it was sent. */
export const steppedModel = (options: { readonly vision?: boolean } = {}) => {
  const offered: Array<{ readonly turn: number; readonly tools: ReadonlyArray<ToolSpec> }> = []
  const sent: Array<ReadonlyArray<ChatMessage>> = []
  const model = Scripted.make((request, index) => {
    offered.push({ turn: index, tools: request.tools })
    sent.push(request.messages)
    const users = request.messages.filter((m) => m._tag === "user")
    const last = users[users.length - 1]
    const parsed: unknown = JSON.parse(last?.content ?? "[]")
    const turns = isTurns(parsed) ? parsed : []
    const results = request.messages.slice(last === undefined ? 0 : request.messages.lastIndexOf(last))
      .flatMap((m) => m._tag === "tool" ? [m.content] : [])
    const calls = turns[index]
    return calls === undefined ? { text: `done: ${results.join(" | ")}` } : { toolCalls: calls, text: "" }
  }, "stepped", options)
  return { model, offered, sent }
}
