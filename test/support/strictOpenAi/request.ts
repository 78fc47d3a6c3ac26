/** A Chat Completions request body validated the way OpenAI does. */
import { Either } from "effect"
import { checkToolPairing, parseMessage } from "./messages.js"
import { emptyArray, invalidType, isRecord, missing, reject } from "./rejections.js"
import { checkToolNames, parseTool } from "./tools.js"
import type { ChatMessage, ChatRequest, ChatTool, OpenAiError } from "./wire.js"

/** The most tools OpenAI takes in one request. */
const maxTools = 128

/**
 * Validates a Chat Completions request body the way OpenAI does, and returns it in a typed
 * shape, or the `error` object OpenAI would answer with (status 400).
 */
export const parseChatRequest = (body: unknown): Either.Either<ChatRequest, OpenAiError> =>
  Either.gen(function*() {
    if (!isRecord(body)) return yield* invalidType("body", "an object", body)
    if (typeof body.model !== "string" || body.model.length === 0) {
      return yield* reject("you must provide a model parameter", null)
    }
    const model = body.model
    if (body.stream !== undefined && body.stream !== null && typeof body.stream !== "boolean") {
      return yield* invalidType("stream", "a boolean", body.stream)
    }
    const stream = body.stream === true
    let includeUsage = false
    if (body.stream_options !== undefined && body.stream_options !== null) {
      if (!stream) {
        return yield* reject("The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options")
      }
      if (!isRecord(body.stream_options)) return yield* invalidType("stream_options", "an object", body.stream_options)
      includeUsage = body.stream_options.include_usage === true
    }

    if (body.messages === undefined) return yield* missing("messages")
    if (!Array.isArray(body.messages)) return yield* invalidType("messages", "an array of objects", body.messages)
    if (body.messages.length === 0) return yield* emptyArray("messages")
    const messages: Array<ChatMessage> = []
    for (const [index, raw] of body.messages.entries()) messages.push(yield* parseMessage(raw, index))

    const tools: Array<ChatTool> = []
    if (body.tools !== undefined && body.tools !== null) {
      if (!Array.isArray(body.tools)) return yield* invalidType("tools", "an array of objects", body.tools)
      if (body.tools.length === 0) return yield* emptyArray("tools")
      if (body.tools.length > maxTools) {
        return yield* reject(
          `Invalid 'tools': array too long. Expected an array with maximum length ${maxTools}, but got an array with length ${body.tools.length} instead.`,
          "tools",
          "array_above_max_length"
        )
      }
      for (const [index, raw] of body.tools.entries()) tools.push(yield* parseTool(raw, index))
    }

    yield* checkToolPairing(messages)
    yield* checkToolNames(messages, tools)
    const request: ChatRequest = { model, stream, includeUsage, messages, tools, body }
    return request
  })

/** Why OpenAI would reject `body` with a 400 (its error message), or `undefined` if it is valid. */
export const validateChatRequest = (body: unknown): string | undefined =>
  Either.match(parseChatRequest(body), { onLeft: (problem) => problem.message, onRight: () => undefined })
