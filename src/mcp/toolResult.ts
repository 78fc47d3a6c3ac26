/**
 * An MCP tool result as the model reads it: text content joined, other content (images, audio,
 * embedded resources, links) described in a line each, structured content as JSON when there is
 * no text. Images a vision model can be shown (the types and sizes `view_image` shows) are also
 * kept apart, with a text that names each one for a model that sees them. Whether the server
 * flagged the result as an error is kept apart.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Either, Encoding } from "effect"
import { signatureMediaType } from "../environments/vfs/mediaType.js"
import type { ImageContent } from "../models/Model.js"
import { maxImageBytes, viewableImageNames, viewableImageTypes } from "../models/viewableImages.js"

/** A tool result as a model reads it. */
export interface ToolResultContent {
  /** What a model that cannot see reads: every image described. */
  readonly text: string
  /** The images a model that sees is shown. */
  readonly images: ReadonlyArray<ImageContent>
  /** What a model that sees reads beside `images`: each named, and each image it is not shown said why. */
  readonly textWithImages: string
}

/** A tool result, and whether it is an error. */
export interface ToolResult extends ToolResultContent {
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

/** Padded base64, as a data URL takes it (the SDK's check lets whitespace and missing padding through). */
const isBase64 = (data: string): boolean => data.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(data)

/**
 * An image as a model is shown it, or why it cannot be: its type is the one its bytes' signature
 * announces (as for `view_image`), else the one the server says.
 */
const viewable = (data: string, mimeType: string): Either.Either<ImageContent, string> => {
  const bytes = decodedBytes(data)
  if (bytes > maxImageBytes) return Either.left(`over the ${maxImageBytes} bytes a model is shown`)
  if (!isBase64(data)) return Either.left("its data is not padded base64")
  const head = Encoding.decodeBase64(data.slice(0, 16))
  const mediaType = (Either.isRight(head) ? signatureMediaType(head.right) : undefined) ?? mimeType
  if (!viewableImageTypes.has(mediaType)) return Either.left(`a model is shown ${viewableImageNames}`)
  return Either.right({ mediaType, data })
}

/** A result of `tools/call` (or the protocol's older `toolResult` form) as a model reads it. */
export const toolResult = (
  result: { readonly content: ReadonlyArray<Content>; readonly structuredContent?: unknown; readonly isError?: boolean } | { readonly toolResult: unknown }
): ToolResult => {
  if (!("content" in result)) {
    const text = JSON.stringify(result.toolResult) ?? ""
    return { text, images: [], textWithImages: text, isError: false }
  }
  const parts = result.content.map(describe)
  const text = parts.length === 0 && result.structuredContent !== undefined ? JSON.stringify(result.structuredContent) : parts.join("\n")
  const images: Array<ImageContent> = []
  const named = result.content.map((content, i) => {
    if (content.type !== "image") return parts[i]
    const bytes = decodedBytes(content.data)
    const shown = viewable(content.data, content.mimeType)
    if (Either.isLeft(shown)) return `[image: ${content.mimeType}, ${bytes} bytes, not shown: ${shown.left}]`
    images.push(shown.right)
    return `[image ${images.length}: ${shown.right.mediaType}, ${bytes} bytes, shown]`
  })
  const textWithImages = result.content.some((content) => content.type === "image") ? named.join("\n") : text
  return { text, images, textWithImages, isError: result.isError === true }
}
