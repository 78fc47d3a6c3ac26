/**
 * What the model reads of an MCP tool result, and the names it calls MCP tools by.
 */
import { describe, expect, it } from "@effect/vitest"
import { mcpToolName } from "../../src/mcp/offerable.js"
import { toolResult } from "../../src/mcp/toolResult.js"

describe("MCP tool results as text", () => {
  it("text parts are joined; images, audio, embedded binaries and links are described in a line each", () => {
    const result = toolResult({
      content: [
        { type: "text", text: "first" },
        { type: "image", data: "AAAAAA==", mimeType: "image/png" },
        { type: "audio", data: "AAAA", mimeType: "audio/wav" },
        { type: "resource", resource: { uri: "file:///notes.txt", text: "embedded text" } },
        { type: "resource", resource: { uri: "file:///a.bin", blob: "AAAA", mimeType: "application/octet-stream" } },
        { type: "resource_link", uri: "file:///big.csv", name: "big.csv", description: "the full table" }
      ]
    })
    expect(result).toMatchObject({
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

  it("for a model that sees, images of the types and sizes view_image shows are kept apart and named; the others say why not", () => {
    const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    const jpeg = "/9j/4AAQSkZJRgABAQ=="
    const big = "A".repeat(4 * Math.ceil(4_000_001 / 3))
    const result = toolResult({
      content: [
        { type: "text", text: "the page" },
        { type: "image", data: png, mimeType: "image/png" },
        // The bytes' signature wins over the type the server says, as for view_image.
        { type: "image", data: jpeg, mimeType: "image/png" },
        { type: "image", data: "AAAA", mimeType: "image/tiff" },
        { type: "image", data: big, mimeType: "image/png" },
        { type: "image", data: "AAA", mimeType: "image/png" }
      ]
    })
    expect(result.images).toEqual([{ mediaType: "image/png", data: png }, { mediaType: "image/jpeg", data: jpeg }])
    expect(result.textWithImages.split("\n")).toEqual([
      "the page",
      "[image 1: image/png, 70 bytes, shown]",
      "[image 2: image/jpeg, 13 bytes, shown]",
      "[image: image/tiff, 3 bytes, not shown: a model is shown PNG, JPEG, GIF or WebP]",
      "[image: image/png, 4000002 bytes, not shown: over the 4000000 bytes a model is shown]",
      "[image: image/png, 2 bytes, not shown: its data is not padded base64]"
    ])
    // A model that cannot see reads every image described, as before.
    expect(result.text.split("\n").slice(1)).toEqual([
      "[image: image/png, 70 bytes, not shown]",
      "[image: image/png, 13 bytes, not shown]",
      "[image: image/tiff, 3 bytes, not shown]",
      "[image: image/png, 4000002 bytes, not shown]",
      "[image: image/png, 2 bytes, not shown]"
    ])
  })

  it("structured content stands in for missing text; isError is kept; the old toolResult form is read", () => {
    expect(toolResult({ content: [], structuredContent: { temperature: 21 } })).toMatchObject({ text: `{"temperature":21}`, isError: false })
    expect(toolResult({ content: [{ type: "text", text: "no such file" }], isError: true })).toMatchObject({ text: "no such file", isError: true })
    expect(toolResult({ toolResult: { ok: true } })).toMatchObject({ text: `{"ok":true}`, isError: false })
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
