/** The prompt tokens the strict fake pretends a request costs. */
import type { ChatRequest } from "./wire.js"

/** Roughly four characters per token, as OpenAI's own rule of thumb for English text. */
export const tokensFor = (characters: number) => Math.ceil(characters / 4)

/**
 * The prompt tokens we pretend a request costs: `ceil(characters / 4)`, where the characters
 * are those of every message's text content, every tool call's arguments, and every tool's
 * schema (`JSON.stringify` of its name, description and parameters). Crude but monotonic:
 * a longer transcript always costs more, which is all the context-window tests need.
 */
export const estimateTokens = (request: Pick<ChatRequest, "messages" | "tools">): number => {
  let characters = 0
  for (const message of request.messages) {
    characters += message.content?.length ?? 0
    if (message.role === "assistant") {
      for (const call of message.toolCalls) characters += call.arguments.length
    }
  }
  for (const tool of request.tools) {
    characters += JSON.stringify({ name: tool.name, description: tool.description, parameters: tool.parameters }).length
  }
  return tokensFor(characters)
}
