/**
 * MCP tools as models accept them: OpenAI refuses a whole request (400) for one function whose
 * schema has an object without `properties` or an array without `items`, or whose description is
 * over 1024 characters. A server's tools are offered with their schemas completed and their
 * descriptions cut, with a warning naming the server and the tool.
 */
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Logger, LogLevel } from "effect"
import { loadProject } from "../../src/compiler/loadProject.js"
import * as McpClients from "../../src/mcp/McpClients.js"
import { agentTools } from "../../src/mcp/mcpTools.js"
import { tempProject } from "../support/tempProject.js"
import { mcpProject } from "./mcpProject.js"

const longDescription = "Reads a document. ".repeat(160)
// Its emoji's two halves fall either side of the cut.
const emojiDescription = `${"x".repeat(1022)}😀 and more than fits`

const looseTools: ReadonlyArray<Tool> = [
  // What the MCP Go SDK lists for a tool without parameters.
  { name: "no_params", description: "Takes nothing", inputSchema: { type: "object" } },
  {
    name: "tagged",
    description: "Takes tags",
    inputSchema: {
      type: "object",
      properties: {
        tags: { type: "array" },
        filter: { anyOf: [{ type: "object" }, { type: "null" }] },
        nested: { type: "object", properties: { list: { type: ["array", "null"] } } },
        ref: { $ref: "#/$defs/Shape" }
      },
      $defs: { Shape: { type: "object" } }
    }
  },
  { name: "long_doc", description: longDescription, inputSchema: { type: "object", properties: {} } },
  { name: "emoji_doc", description: emojiDescription, inputSchema: { type: "object", properties: {} } }
]

/**
 * Every schema in `schema` that OpenAI's function-schema check refuses, by path: an object without
 * `properties`, an array without `items` (what the strict fake provider would check).
 */
const refused = (schema: unknown, path = "$"): ReadonlyArray<string> => {
  if (typeof schema !== "object" || schema === null) return []
  if (Array.isArray(schema)) return schema.flatMap((s, i) => refused(s, `${path}[${i}]`))
  const fields = Object.entries(schema)
  const type = "type" in schema ? [schema.type].flat() : []
  const own = [
    ...(type.includes("object") && !("properties" in schema) ? [`${path}: object schema missing properties`] : []),
    ...(type.includes("array") && !("items" in schema) ? [`${path}: array schema missing items`] : [])
  ]
  return [...own, ...fields.flatMap(([key, value]) => refused(value, `${path}.${key}`))]
}

describe("MCP tool schemas and descriptions", () => {
  it.scopedLive("a server's loose schemas are offered completed and a long description cut, warned of once a listing", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(mcpProject({ log: join(tmpdir(), `foundry-mcp-${randomUUID()}.log`), fixtureTools: looseTools }))
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
      const spec = (name: string) => tools.get(name)?.spec ?? expect.fail(`${name} is not offered`)
      expect(spec("files__no_params").parameters).toEqual({ type: "object", properties: {} })
      expect(spec("files__tagged").parameters).toMatchObject({
        properties: {
          tags: { type: "array", items: {} },
          filter: { anyOf: [{ type: "object", properties: {} }, { type: "null" }] },
          nested: { properties: { list: { type: ["array", "null"], items: {} } } }
        },
        $defs: { Shape: { type: "object", properties: {} } }
      })
      expect([...tools.values()].flatMap((t) => refused(t.spec.parameters, t.name))).toEqual([])
      const cut = spec("files__long_doc").description
      expect(cut).toHaveLength(1024)
      expect(cut).toBe(`${longDescription.slice(0, 1023)}…`)
      // The fixture's dotted_name is left out on each turn: not what this test is about.
      expect(spec("files__emoji_doc").description).toBe(`${"x".repeat(1022)}…`)
      expect(warnings.filter((w) => !w.includes("dotted_name"))).toEqual([
        `MCP server files: the description of the tool long_doc is cut to 1024 characters for models (it has ${longDescription.length}, more than OpenAI accepts)`,
        `MCP server files: the description of the tool emoji_doc is cut to 1024 characters for models (it has ${emojiDescription.length}, more than OpenAI accepts)`
      ])
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scopedLive("a tool the MCP schema refuses (an input whose type is not object) is left out with a warning, not its whole server", () =>
    Effect.gen(function*() {
      const bad = { name: "takes_text", description: "Input is a bare string", inputSchema: { type: "string" } }
      const root = yield* tempProject(mcpProject({ log: join(tmpdir(), `foundry-mcp-${randomUUID()}.log`), rawFixtureTools: [bad] }))
      const app = yield* loadProject(root, 1)
      const worker = app.agents.get("worker") ?? expect.fail("the project has no worker")
      const warnings: Array<string> = []
      const collect = Logger.make(({ logLevel, message }) => {
        if (LogLevel.greaterThanEqual(logLevel, LogLevel.Warning)) warnings.push(Array.isArray(message) ? message.join(" ") : String(message))
      })
      const tools = yield* agentTools(worker).pipe(Effect.provide(McpClients.layer()), Effect.provide(Logger.replace(Logger.defaultLogger, collect)))
      // The server's other tools are offered; the one no client can take is not.
      expect([...tools.keys()]).toContain("files__echo")
      expect([...tools.keys()]).not.toContain("files__takes_text")
      expect(warnings.filter((w) => w.includes("takes_text"))).toEqual([
        expect.stringMatching(/^MCP server files: its tool takes_text is left out: inputSchema\.type: .+ \(its other tools are offered\)$/)
      ])
    }).pipe(Effect.provide(NodeContext.layer)))
})
