/** What the strict fake answers: scripted replies, and builders for OpenAI's common answers. */
import type { ChatRequest, OpenAiError } from "./wire.js"

/** A tool call a scripted reply makes; `id` defaults to `call_<n>`, numbered per server. */
export interface ScriptedToolCall {
  readonly id?: string
  readonly name: string
  /** The raw JSON text of the arguments, streamed in fragments. */
  readonly arguments: string
}

/** Token counts to report instead of the estimates. */
export interface ScriptedUsage {
  readonly promptTokens: number
  readonly completionTokens: number
  /** Of `promptTokens`, those served from the prompt cache (`prompt_tokens_details.cached_tokens`); 0 by default. */
  readonly cachedTokens?: number
}

/** What the fake model answers to one completion request. */
export type Reply =
  | { readonly _tag: "Text"; readonly text: string; readonly usage?: ScriptedUsage }
  | {
    readonly _tag: "ToolCalls"
    readonly calls: ReadonlyArray<ScriptedToolCall>
    /** Text the model says before calling the tools (streamed before the calls). */
    readonly text?: string
    readonly usage?: ScriptedUsage
  }
  | {
    readonly _tag: "Error"
    readonly status: number
    readonly error: OpenAiError
    /** Response headers to add, e.g. `retry-after`. */
    readonly headers?: Readonly<Record<string, string>>
  }
  /**
   * The chunks of a stream exactly as given (each sent as a `data:` event, then `[DONE]`), for
   * what compatible servers send and OpenAI does not: a chunk without `delta`, no `finish_reason`.
   */
  | { readonly _tag: "Chunks"; readonly chunks: ReadonlyArray<Record<string, unknown>> }

/** A reply computed from the request, e.g. answering with the last tool result. */
export type ReplyFn = (request: ChatRequest, index: number) => Reply

/** One step of a script: a fixed reply, or a function of the request. */
export type ScriptStep = Reply | ReplyFn

/** A text reply (`finish_reason: "stop"`). */
export const text = (text: string, usage?: ScriptedUsage): Reply => ({
  _tag: "Text",
  text,
  ...(usage === undefined ? {} : { usage })
})

/** A reply calling one or more tools (`finish_reason: "tool_calls"`). */
export const toolCalls = (...calls: ReadonlyArray<ScriptedToolCall>): Reply => ({ _tag: "ToolCalls", calls })

/** An error answer with OpenAI's body shape. */
export const error = (
  status: number,
  message: string,
  options: {
    readonly type?: string
    readonly param?: string | null
    readonly code?: string | null
    readonly headers?: Readonly<Record<string, string>>
  } = {}
): Reply => ({
  _tag: "Error",
  status,
  error: {
    message,
    type: options.type ?? "invalid_request_error",
    param: options.param ?? null,
    code: options.code ?? null
  },
  ...(options.headers === undefined ? {} : { headers: options.headers })
})

/** A streamed answer of exactly these chunks (see the `Chunks` reply). */
export const chunks = (...chunks: ReadonlyArray<Record<string, unknown>>): Reply => ({ _tag: "Chunks", chunks })

/** OpenAI's 429, as sent when a requests-per-minute limit is hit. */
export const rateLimited = (model = "gpt-4.1-mini", headers?: Readonly<Record<string, string>>): Reply =>
  error(
    429,
    `Rate limit reached for ${model} in organization org-test on requests per min (RPM): Limit 3, Used 3, ` +
      "Requested 1. Please try again in 20s. Visit https://platform.openai.com/account/rate-limits to learn more.",
    { type: "requests", code: "rate_limit_exceeded", ...(headers === undefined ? {} : { headers }) }
  )

/** OpenAI's 429 for an account out of credit: waiting does not help. */
export const insufficientQuota = (): Reply =>
  error(
    429,
    "You exceeded your current quota, please check your plan and billing details. For more information on this " +
      "error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
    { type: "insufficient_quota", code: "insufficient_quota" }
  )

/** OpenAI's generic 500. */
export const serverError = (): Reply =>
  error(500, "The server had an error while processing your request. Sorry about that!", { type: "server_error" })

/** A 400 `invalid_request_error` with the given message. */
export const badRequest = (message: string, param: string | null = null, code: string | null = null): Reply =>
  error(400, message, { param, code })

/** The `error` object OpenAI sends when a request does not fit the model's context window. */
export const contextLengthError = (maxTokens: number, tokens: number): OpenAiError => ({
  message: `This model's maximum context length is ${maxTokens} tokens. However, your messages resulted in ` +
    `${tokens} tokens. Please reduce the length of the messages.`,
  type: "invalid_request_error",
  param: "messages",
  code: "context_length_exceeded"
})

/** OpenAI's context-length 400, on command (see `contextWindows` for the automatic one). */
export const contextLengthExceeded = (maxTokens: number, tokens: number): Reply => ({
  _tag: "Error",
  status: 400,
  error: contextLengthError(maxTokens, tokens)
})
