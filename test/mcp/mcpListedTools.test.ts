/**
 * What a server's listing decides about its tools, once a listing: schemas completed and
 * descriptions cut for models (warned of once, not on each turn), tools that must run as tasks
 * left out, and every tool that declares an output schema held to it, on whichever page of
 * `tools/list` it came and however the page was read. Through a real project served over HTTP,
 * with a Streamable HTTP server written with the MCP SDK (one that announces changes to its tools,
 * so it is listed again after each turn that called it).
 */
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { logLines } from "../support/logLines.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"
import { startHttpServer } from "./fixtures/httpServer.js"
import { authVariable, mcpProject, steppedModel, steps } from "./mcpProject.js"

const longDescription = "Lists the files of a folder. ".repeat(40)

/** A name over the 64 characters models take, as `web__<name>`. */
const longName = "long_".repeat(12)

const counts: Tool["outputSchema"] = { type: "object", properties: { count: { type: "number" } }, required: ["count"] }

/** Page 1 of the server's listing (with its own tools). */
const firstPage: ReadonlyArray<Tool> = [
  // Needs completing for models: an object without properties inside.
  { name: "loose", description: longDescription, inputSchema: { type: "object", properties: { filter: { type: "object" } } } },
  { name: "counted", description: "Counts, wrongly", inputSchema: { type: "object", properties: {} }, outputSchema: counts },
  { name: "counted_in_text", description: "Counts in text only", inputSchema: { type: "object", properties: {} }, outputSchema: counts },
  { name: "as_task", description: "Runs only as a task", inputSchema: { type: "object", properties: {} }, execution: { taskSupport: "required" } },
  { name: longName, description: "Has a long name", inputSchema: { type: "object", properties: {} } }
]

/** Page 2. */
const secondPage: ReadonlyArray<Tool> = [
  { name: "counted_too", description: "Counts, wrongly too", inputSchema: { type: "object", properties: {} }, outputSchema: counts },
  { name: "counted_right", description: "Counts", inputSchema: { type: "object", properties: {} }, outputSchema: counts }
]

const answers: Record<string, CallToolResult> = {
  loose: { content: [{ type: "text", text: "loose ran" }] },
  counted: { content: [{ type: "text", text: "many" }], structuredContent: { count: "many" } },
  counted_in_text: { content: [{ type: "text", text: "3" }] },
  counted_too: { content: [{ type: "text", text: "lots" }], structuredContent: { count: "lots" } },
  counted_right: { content: [{ type: "text", text: "3" }], structuredContent: { count: 3 } }
}

/** The project mounting the server as `web`, served with the stepped model. */
const setup = (rawTools?: ReadonlyArray<unknown>) =>
  Effect.gen(function*() {
    const token = `secret-${randomUUID()}`
    process.env[authVariable] = `Bearer ${token}`
    yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env[authVariable]))
    const web = yield* startHttpServer(token, {
      tools: firstPage,
      secondPage,
      run: (tool) => answers[tool],
      ...(rawTools === undefined ? {} : { rawTools })
    })
    const root = yield* tempProject(mcpProject({ log: join(tmpdir(), `foundry-mcp-${randomUUID()}.log`), httpUrl: web.url, files: false }))
    const { model, offered } = steppedModel()
    const server = yield* startServer(root, { model })
    return { url: server.url, offered }
  })

const submit = (url: string, message: string) =>
  Effect.map(http(`${url}/api/runs`, { body: { agent: "worker", message } }), (r) => {
    expect(r.status).toBe(202)
    return r.json as { readonly runId: string }
  })

/** Runs `turns` of calls to completion; the run's output, and the tools offered on each turn. */
const runOf = (rawTools: ReadonlyArray<unknown> | undefined, ...turns: ReadonlyArray<ReadonlyArray<{ readonly name: string; readonly arguments: unknown }>>) =>
  Effect.gen(function*() {
    const { offered, url } = yield* setup(rawTools)
    const run = yield* submit(url, steps(...turns))
    return { ended: yield* waitForRun(url, run.runId), offered }
  })

const mismatch = (tool: string) =>
  `Error: web__${tool} failed: McpToolFailed: ${tool} on MCP server web: MCP error -32602: ` +
  "Structured content does not match the tool's output schema: data/count must be number"

describe("MCP tools as listed", () => {
  it.scopedLive("a tool's schema is completed, and its cut description and another's name too long warned of once, not on each turn that lists them again", () =>
    Effect.gen(function*() {
      const warnings = yield* logLines
      const call = [{ name: "web__loose", arguments: { filter: {} } }]
      const { ended, offered } = yield* runOf(undefined, call, call, call)
      expect(ended).toMatchObject({ status: "completed", output: "done: loose ran | loose ran | loose ran" })
      expect(offered).toHaveLength(4)
      for (const { tools } of offered) {
        const loose = tools.find((tool) => tool.name === "web__loose")
        expect(loose?.parameters).toEqual({ type: "object", properties: { filter: { type: "object", properties: {} } } })
        expect(loose?.description).toHaveLength(1024)
      }
      expect(warnings.filter((line) => line.includes("the tool loose"))).toEqual([
        `MCP server web: the description of the tool loose is cut to 1024 characters for models (it has ${longDescription.length}, more than OpenAI accepts)`
      ])
      expect(warnings.filter((line) => line.includes(longName))).toEqual([`MCP server web: the tool ${longName} is left out, its name is too long for models`])
      // Two of the server's tools with one name for models: the one left out is warned of once too.
      expect(warnings.filter((line) => line.includes("web__dotted_name is taken"))).toHaveLength(1)
    }))

  it.scopedLive("a tool that runs only as a task is not offered, with one warning saying why", () =>
    Effect.gen(function*() {
      const warnings = yield* logLines
      const call = [{ name: "web__loose", arguments: { filter: {} } }]
      const { ended, offered } = yield* runOf(undefined, call, call)
      expect(ended.status).toBe("completed")
      for (const { tools } of offered) {
        expect(tools.map((tool) => tool.name)).not.toContain("web__as_task")
        expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(["web__loose", "web__counted", "web__counted_too"]))
      }
      expect(warnings.filter((line) => line.includes("as_task"))).toEqual([
        "MCP server web: the tool as_task is left out, it runs only as a task (its listing says execution.taskSupport \"required\"), " +
        "and Foundry calls tools with a plain tools/call, which such a tool refuses"
      ])
    }))

  // Read tool by tool: page 2 has a tool the SDK's schema refuses.
  const listings = { whole: undefined, "tool by tool": [{ name: "takes_text", inputSchema: { type: "string" } }] }
  for (const [listing, rawTools] of Object.entries(listings)) {
    it.scopedLive(`structured content not matching a tool's output schema is an error to the model, on either page of tools/list read ${listing}`, () =>
      Effect.gen(function*() {
        const warnings = yield* logLines
        const { ended } = yield* runOf(
          rawTools,
          [{ name: "web__counted", arguments: {} }],
          [{ name: "web__counted_too", arguments: {} }],
          [{ name: "web__counted_right", arguments: {} }],
          [{ name: "web__counted_in_text", arguments: {} }]
        )
        const none = "Error: web__counted_in_text failed: McpToolFailed: counted_in_text on MCP server web: MCP error -32600: " +
          "Tool counted_in_text has an output schema but did not return structured content"
        expect(ended).toMatchObject({ status: "completed", output: `done: ${mismatch("counted")} | ${mismatch("counted_too")} | 3 | ${none}` })
        expect(warnings.some((line) => line.includes("its tool takes_text is left out"))).toBe(rawTools !== undefined)
      }))
  }
})
