/**
 * An MCP tool result as the model reads it: text content joined, other content (images, audio,
 * embedded resources, links) described in a line each, structured content as JSON when there is
 * no text. Whether the server flagged the result as an error is kept apart.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"

/** A tool result as text, and whether it is an error. */
export interface ToolResultText {
  readonly text: string
  readonly isError: boolean
}

type Content = CallToolResult["content"][number]

/** The size of base64 data once decoded, in bytes. */
const decodedBytes = (base64: string): number => Math.floor(base64.replace(/=+$/, "").length * 3 / 4)

const describe = (content: Content): string => {
  switch (content.type) {
    case "text":
      return content.text
    case "image":
    case "audio":
      return `[${content.type}: ${content.mimeType}, ${decodedBytes(content.data)} bytes, not shown]`
    case "resource":
      return "text" in content.resource
        ? content.resource.text
        : `[resource ${content.resource.uri}${content.resource.mimeType === undefined ? "" : ` (${content.resource.mimeType})`}, ${decodedBytes(content.resource.blob)} bytes, not shown]`
    case "resource_link":
      return `[resource link: ${content.uri} (${content.name})${content.description === undefined ? "" : `: ${content.description}`}]`
  }
}

/** A result of `tools/call` (or the protocol's older `toolResult` form) as text. */
export const toolResultText = (
  result: { readonly content: ReadonlyArray<Content>; readonly structuredContent?: unknown; readonly isError?: boolean } | { readonly toolResult: unknown }
): ToolResultText => {
  if (!("content" in result)) return { text: JSON.stringify(result.toolResult) ?? "", isError: false }
  const parts = result.content.map(describe)
  const text = parts.length === 0 && result.structuredContent !== undefined ? JSON.stringify(result.structuredContent) : parts.join("\n")
  return { text, isError: result.isError === true }
}
