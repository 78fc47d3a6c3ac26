/**
 * What the model reads of an MCP tool result, and the names it calls MCP tools by.
 */
import { describe, expect, it } from "@effect/vitest"
import { mcpToolName } from "../../src/mcp/mcpTools.js"
import { toolResultText } from "../../src/mcp/toolResult.js"

describe("MCP tool results as text", () => {
  it("text parts are joined; images, audio, embedded binaries and links are described in a line each", () => {
    expect(toolResultText({
      content: [
        { type: "text", text: "first" },
        { type: "image", data: "AAAAAA==", mimeType: "image/png" },
        { type: "audio", data: "AAAA", mimeType: "audio/wav" },
        { type: "resource", resource: { uri: "file:///notes.txt", text: "embedded text" } },
        { type: "resource", resource: { uri: "file:///a.bin", blob: "AAAA", mimeType: "application/octet-stream" } },
        { type: "resource_link", uri: "file:///big.csv", name: "big.csv", description: "the full table" }
      ]
    })).toEqual({
      isError: false,
      text: [
        "first",
        "[image: image/png, 4 bytes, not shown]",
        "[audio: audio/wav, 3 bytes, not shown]",
        "embedded text",
        "[resource file:///a.bin (application/octet-stream), 3 bytes, not shown]",
        "[resource link: file:///big.csv (big.csv): the full table]"
      ].join("\n")
    })
  })

  it("structured content stands in for missing text; isError is kept; the old toolResult form is read", () => {
    expect(toolResultText({ content: [], structuredContent: { temperature: 21 } })).toEqual({ text: `{"temperature":21}`, isError: false })
    expect(toolResultText({ content: [{ type: "text", text: "no such file" }], isError: true })).toEqual({ text: "no such file", isError: true })
    expect(toolResultText({ toolResult: { ok: true } })).toEqual({ text: `{"ok":true}`, isError: false })
  })
})

describe("MCP tool names", () => {
  it("are <server>__<tool>, with characters models refuse as _, and none over 64 characters", () => {
    expect(mcpToolName("files", "read")).toBe("files__read")
    expect(mcpToolName("git-hub", "issues.create/v2")).toBe("git-hub__issues_create_v2")
    expect(mcpToolName("files", "x".repeat(57))).toHaveLength(64)
    expect(mcpToolName("files", "x".repeat(58))).toBeUndefined()
  })
})
