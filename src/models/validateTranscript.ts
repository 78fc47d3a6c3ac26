/**
 * The rules the strictest provider (OpenAI's Chat Completions) applies to a transcript, checked
 * before any model adapter sees it: every assistant message with tool calls is followed directly
 * by exactly one tool message per call (in any order among themselves), and no tool message
 * answers a call that is not directly above it. A transcript that breaks them would be rejected
 * with a 400 for every later message of the conversation, so the engine refuses to send it.
 */
import type { ChatMessage } from "./Model.js"

/** Why `messages` would be rejected, or `undefined` when they are valid. */
export const transcriptProblem = (messages: ReadonlyArray<ChatMessage>): string | undefined => {
  let open = new Set<string>()
  let answering = false
  for (const [index, message] of messages.entries()) {
    if (message._tag === "tool") {
      if (!answering || !open.has(message.toolCallId)) {
        return `message ${index}: the tool result for ${message.toolCallId} does not directly follow the assistant message that called it`
      }
      open.delete(message.toolCallId)
      continue
    }
    if (open.size > 0) {
      return `message ${index} (${message._tag}): the tool calls ${[...open].join(", ")} have no result before it`
    }
    answering = message._tag === "assistant" && message.toolCalls.length > 0
    open = new Set(answering && message._tag === "assistant" ? message.toolCalls.map((call) => call.id) : [])
    if (message._tag === "assistant" && open.size !== message.toolCalls.length) {
      return `message ${index}: two tool calls share one id`
    }
  }
  return open.size > 0 ? `the tool calls ${[...open].join(", ")} of the last assistant message have no result` : undefined
}
