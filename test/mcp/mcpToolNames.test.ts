/**
 * The names models call an MCP server's tools by: two tools whose names are the same to a model
 * (`dotted.name` and `dotted_name`, both `files__dotted_name`) cannot both be offered, and the one
 * left out is named in the log with the one that kept the name, once a listing, not on each turn.
 */
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Logger, LogLevel } from "effect"
import { loadProject } from "../../src/compiler/loadProject.js"
import * as McpClients from "../../src/mcp/McpClients.js"
import { agentTools } from "../../src/mcp/mcpTools.js"
import { tempProject } from "../support/tempProject.js"
import { mcpProject } from "./mcpProject.js"

describe("MCP tool names", () => {
  it.scopedLive("of two server tools with one name for models, the first keeps it and the second is left out with one warning naming both", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(mcpProject({ log: join(tmpdir(), `foundry-mcp-${randomUUID()}.log`) }))
      const app = yield* loadProject(root, 1)
      const worker = app.agents.get("worker") ?? expect.fail("the project has no worker")
      const warnings: Array<string> = []
      const collect = Logger.make(({ logLevel, message }) => {
        if (LogLevel.greaterThanEqual(logLevel, LogLevel.Warning)) warnings.push(Array.isArray(message) ? message.join(" ") : String(message))
      })
      // Two turns' worth: the warning is not repeated on each.
      const [tools] = yield* Effect.all([agentTools(worker), agentTools(worker)]).pipe(
        Effect.provide(McpClients.layer()),
        Effect.provide(Logger.replace(Logger.defaultLogger, collect))
      )
      expect(tools.get("files__dotted_name")?.id).toBe("mcp:files/dotted.name")
      expect(warnings).toEqual([expect.stringContaining(
        "MCP server files: the tool dotted_name is left out, its name for models files__dotted_name is taken by the tool dotted.name of MCP server files"
      )])
    }).pipe(Effect.provide(NodeContext.layer)))
})
