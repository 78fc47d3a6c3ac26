/**
 * Refusals of OpenAI-compatible servers that OpenAI itself does not make, each on its option:
 * strict chat templates, LiteLLM in front of Bedrock or Anthropic.
 */
import type { StrictOpenAiOptions } from "./state.js"
import type { ChatRequest, OpenAiError } from "./wire.js"

/**
 * Two user messages in a row, or two assistant messages, refused by vLLM's or llama.cpp's strict
 * templates (`alternatingRoles`).
 */
const rolesTogether = (request: ChatRequest): OpenAiError | undefined =>
  request.messages.some((message, i) =>
    i > 0 && (message.role === "user" || message.role === "assistant") && request.messages[i - 1]?.role === message.role
  )
    ? { message: "Conversation roles must alternate user/assistant/user/assistant/...", type: "BadRequestError", param: null, code: null }
    : undefined

/**
 * A history with tool calls or results and no `tools`, refused by LiteLLM in front of Bedrock or
 * Anthropic, whose APIs want the tools of every call the history holds (`toolsForToolCalls`).
 */
const toolCallsWithoutTools = (request: ChatRequest): OpenAiError | undefined =>
  request.tools.length === 0 && request.messages.some((message) => message.role === "tool" || (message.role === "assistant" && message.toolCalls.length > 0))
    ? {
      message: "litellm.UnsupportedParamsError: Bedrock doesn't support tool calling without `tools=` param specified. " +
        "Pass `tools=` param OR set `litellm.modify_params = True` // `litellm_settings::modify_params: True` to add dummy tool to the request.",
      type: "invalid_request_error",
      param: null,
      code: "400"
    }
    : undefined

/** The first refusal the options ask for that `request` earns, if any. */
export const compatibleRefusal = (options: StrictOpenAiOptions, request: ChatRequest): OpenAiError | undefined =>
  (options.alternatingRoles === true ? rolesTogether(request) : undefined) ??
    (options.toolsForToolCalls === true ? toolCallsWithoutTools(request) : undefined)
