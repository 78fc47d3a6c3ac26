/**
 * A strict fake of OpenAI's Chat Completions API, for tests that talk to it through the real
 * `openai` SDK (or through `src/models/openai.ts`, which wraps it).
 *
 * Why strict: the scripted model accepts any transcript, so a bug that produces a transcript
 * OpenAI rejects (a tool call without its result, a result in the wrong place, an empty
 * message, an unknown tool) passes every test and fails only in production, with a 400 on every
 * later turn of the conversation. This server checks each request the way OpenAI does and
 * answers with OpenAI's error shape and, as far as we know them, OpenAI's own messages.
 *
 * What it serves, on `127.0.0.1` and a free port, for the lifetime of the enclosing `Scope`:
 *
 * - `POST /v1/chat/completions`, streamed (SSE chunks exactly as OpenAI sends them: a first
 *   chunk with `role: "assistant"`, text in several `content` deltas, each tool call in
 *   fragments, a `finish_reason` chunk, a `choices: []` usage chunk when
 *   `stream_options.include_usage` is set, then `data: [DONE]`) or not (a `chat.completion`).
 * - `GET /v1/models`, listing the configured models.
 * - Anything else: OpenAI's 404 `Invalid URL (METHOD /path)`.
 *
 * Each completion request is answered, in this order, by:
 * 1. a 401 when there is no `Authorization: Bearer …` header;
 * 2. a 400 when the body breaks a rule of `parseChatRequest` (see `validateChatRequest`);
 * 3. the context-length 400 when the request's estimated tokens (`estimateTokens`) exceed the
 *    model's entry in `contextWindows`;
 * 4. otherwise the next scripted step (`replies`, then `push`ed ones, then `otherwise`): a text
 *    reply, tool calls, an error (429, 500, 400, …), or a function of the request returning one.
 *
 * Rejected requests (1–3) consume no scripted step: the model never saw them.
 */
import { Effect, Either, type Scope } from "effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { close, listen } from "./loopback.js"

// ---------------------------------------------------------------------------------------------
// Wire types
// ---------------------------------------------------------------------------------------------

/** The `error` object of an OpenAI error body, `{ "error": { message, type, param, code } }`. */
export interface OpenAiError {
  readonly message: string
  readonly type: string
  readonly param: string | null
  readonly code: string | null
}

/** A tool call in a validated request (from an assistant message's `tool_calls`). */
export interface ChatToolCall {
  readonly id: string
  readonly name: string
  readonly arguments: string
}

/**
 * A message of a validated request. Content given as an array of parts is reduced to the
 * concatenation of its text parts, which is all a test (or the token estimate) needs.
 */
export type ChatMessage =
  | { readonly role: "system" | "developer" | "user"; readonly content: string }
  | {
    readonly role: "assistant"
    /** `null` only when `toolCalls` is non-empty, as OpenAI requires. */
    readonly content: string | null
    readonly toolCalls: ReadonlyArray<ChatToolCall>
  }
  | { readonly role: "tool"; readonly toolCallId: string; readonly content: string }

/** A function tool offered in a validated request. */
export interface ChatTool {
  readonly name: string
  readonly description: string | undefined
  /** A JSON Schema with `type: "object"`, or `undefined` when the tool takes no parameters. */
  readonly parameters: Readonly<Record<string, unknown>> | undefined
}

/** A request that passed validation, in a shape tests (and reply functions) can read. */
export interface ChatRequest {
  readonly model: string
  readonly stream: boolean
  readonly includeUsage: boolean
  readonly messages: ReadonlyArray<ChatMessage>
  readonly tools: ReadonlyArray<ChatTool>
  /** The body as received, for assertions on fields this type leaves out. */
  readonly body: Readonly<Record<string, unknown>>
}

// ---------------------------------------------------------------------------------------------
// Scripted replies
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** A JSON value's type the way OpenAI names it in "expected …, but got … instead". */
const jsonType = (value: unknown): string => {
  if (value === null) return "null"
  if (Array.isArray(value)) return "an array"
  switch (typeof value) {
    case "string":
      return "a string"
    case "boolean":
      return "a boolean"
    case "number":
      return Number.isInteger(value) ? "an integer" : "a decimal"
    default:
      return "an object"
  }
}

const reject = (
  message: string,
  param: string | null,
  code: string | null = null
): Either.Either<never, OpenAiError> => Either.left({ message, type: "invalid_request_error", param, code })

const missing = (param: string) => reject(`Missing required parameter: '${param}'.`, param, "missing_required_parameter")

const invalidType = (param: string, expected: string, got: unknown) =>
  reject(`Invalid type for '${param}': expected ${expected}, but got ${jsonType(got)} instead.`, param, "invalid_type")

const emptyArray = (param: string) =>
  reject(
    `Invalid '${param}': empty array. Expected an array with minimum length 1, but got an empty array instead.`,
    param,
    "empty_array"
  )

/** OpenAI lists supported values as `'a', 'b', and 'c'`. */
const invalidValue = (param: string, value: string, supported: ReadonlyArray<string>) => {
  const quoted = supported.map((s) => `'${s}'`)
  const list = quoted.length <= 2
    ? quoted.join(" and ")
    : `${quoted.slice(0, -1).join(", ")}, and ${quoted[quoted.length - 1]}`
  return reject(`Invalid value: '${value}'. Supported values are: ${list}.`, param, "invalid_value")
}

type Role = "system" | "developer" | "user" | "assistant" | "tool"
/** In the order OpenAI lists them. */
const roles: ReadonlyArray<Role> = ["system", "assistant", "user", "tool", "developer"]
const isRole = (value: string): value is Role => roles.some((role) => role === value)

/** Which content part types each role accepts (the Chat Completions content-part unions). */
const partTypes: Readonly<Record<Role, ReadonlyArray<string>>> = {
  system: ["text"],
  developer: ["text"],
  user: ["text", "image_url", "input_audio", "file"],
  assistant: ["text", "refusal"],
  tool: ["text"]
}

/** A message's `content`: a string, or a non-empty array of parts; reduced to its text. */
const parseContent = (content: unknown, at: string, allowed: ReadonlyArray<string>) =>
  Either.gen(function*() {
    if (typeof content === "string") return content
    if (!Array.isArray(content)) return yield* invalidType(`${at}.content`, "one of a string or array of objects", content)
    if (content.length === 0) return yield* emptyArray(`${at}.content`)
    let text = ""
    for (const [j, part] of content.entries()) {
      const partAt = `${at}.content[${j}]`
      if (!isRecord(part)) return yield* invalidType(partAt, "an object", part)
      if (part.type === undefined) return yield* missing(`${partAt}.type`)
      if (typeof part.type !== "string") return yield* invalidType(`${partAt}.type`, "a string", part.type)
      if (!allowed.includes(part.type)) return yield* invalidValue(`${partAt}.type`, part.type, allowed)
      if (part.type === "text") {
        if (part.text === undefined) return yield* missing(`${partAt}.text`)
        if (typeof part.text !== "string") return yield* invalidType(`${partAt}.text`, "a string", part.text)
        text += part.text
      }
    }
    return text
  })

const parseToolCalls = (raw: unknown, at: string) =>
  Either.gen(function*() {
    if (!Array.isArray(raw)) return yield* invalidType(`${at}.tool_calls`, "an array of objects", raw)
    if (raw.length === 0) return yield* emptyArray(`${at}.tool_calls`)
    const calls: Array<ChatToolCall> = []
    for (const [k, call] of raw.entries()) {
      const callAt = `${at}.tool_calls[${k}]`
      if (!isRecord(call)) return yield* invalidType(callAt, "an object", call)
      if (call.id === undefined) return yield* missing(`${callAt}.id`)
      if (typeof call.id !== "string") return yield* invalidType(`${callAt}.id`, "a string", call.id)
      if (call.type === undefined) return yield* missing(`${callAt}.type`)
      if (call.type !== "function") return yield* invalidValue(`${callAt}.type`, String(call.type), ["function"])
      if (call.function === undefined) return yield* missing(`${callAt}.function`)
      const fn = call.function
      if (!isRecord(fn)) return yield* invalidType(`${callAt}.function`, "an object", fn)
      if (fn.name === undefined) return yield* missing(`${callAt}.function.name`)
      if (typeof fn.name !== "string") return yield* invalidType(`${callAt}.function.name`, "a string", fn.name)
      if (fn.arguments === undefined) return yield* missing(`${callAt}.function.arguments`)
      if (typeof fn.arguments !== "string") {
        // A common bug: sending the parsed arguments object instead of the JSON text.
        return yield* invalidType(`${callAt}.function.arguments`, "a string", fn.arguments)
      }
      if (calls.some((previous) => previous.id === call.id)) {
        // Our wording: results are matched by id, so two calls sharing one can never be answered.
        return yield* reject(`Invalid '${at}.tool_calls': duplicate tool call id '${call.id}'.`, `${callAt}.id`)
      }
      calls.push({ id: call.id, name: fn.name, arguments: fn.arguments })
    }
    return calls
  })

/** One message's shape: role, content and the fields its role requires. */
const parseMessage = (raw: unknown, index: number) =>
  Either.gen(function*() {
    const at = `messages[${index}]`
    if (!isRecord(raw)) return yield* invalidType(at, "an object", raw)
    if (raw.role === undefined) return yield* missing(`${at}.role`)
    if (typeof raw.role !== "string") return yield* invalidType(`${at}.role`, "a string", raw.role)
    const role = raw.role
    if (!isRole(role)) return yield* invalidValue(`${at}.role`, role, roles)
    switch (role) {
      case "system":
      case "developer":
      case "user": {
        if (raw.content === undefined) return yield* missing(`${at}.content`)
        const content = yield* parseContent(raw.content, at, partTypes[role])
        const message: ChatMessage = { role, content }
        return message
      }
      case "assistant": {
        const toolCalls = raw.tool_calls === undefined ? [] : yield* parseToolCalls(raw.tool_calls, at)
        if (raw.content === undefined || raw.content === null) {
          // `content` may only be left out (or null) next to tool calls.
          if (toolCalls.length === 0) {
            return yield* reject("Invalid value for 'content': expected a string, got null.", `${at}.content`)
          }
          const message: ChatMessage = { role, content: null, toolCalls }
          return message
        }
        const content = yield* parseContent(raw.content, at, partTypes.assistant)
        const message: ChatMessage = { role, content, toolCalls }
        return message
      }
      case "tool": {
        if (raw.tool_call_id === undefined) return yield* missing(`${at}.tool_call_id`)
        if (typeof raw.tool_call_id !== "string") {
          return yield* invalidType(`${at}.tool_call_id`, "a string", raw.tool_call_id)
        }
        if (raw.content === undefined) return yield* missing(`${at}.content`)
        const content = yield* parseContent(raw.content, at, partTypes.tool)
        const message: ChatMessage = { role, toolCallId: raw.tool_call_id, content }
        return message
      }
    }
  })

/** Function names OpenAI accepts: letters, digits, `_` and `-`, at most 64 of them. */
const toolNamePattern = /^[a-zA-Z0-9_-]+$/

const parseTool = (raw: unknown, index: number) =>
  Either.gen(function*() {
    const at = `tools[${index}]`
    if (!isRecord(raw)) return yield* invalidType(at, "an object", raw)
    if (raw.type === undefined) return yield* missing(`${at}.type`)
    if (raw.type !== "function") return yield* invalidValue(`${at}.type`, String(raw.type), ["function"])
    if (raw.function === undefined) return yield* missing(`${at}.function`)
    const fn = raw.function
    if (!isRecord(fn)) return yield* invalidType(`${at}.function`, "an object", fn)
    if (fn.name === undefined) return yield* missing(`${at}.function.name`)
    if (typeof fn.name !== "string") return yield* invalidType(`${at}.function.name`, "a string", fn.name)
    const name = fn.name
    if (!toolNamePattern.test(name)) {
      return yield* reject(
        `Invalid '${at}.function.name': string does not match pattern. Expected a string that matches the pattern '${toolNamePattern.source}'.`,
        `${at}.function.name`,
        "invalid_value"
      )
    }
    if (name.length > 64) {
      return yield* reject(
        `Invalid '${at}.function.name': string too long. Expected a string with maximum length 64, but got a string with length ${name.length} instead.`,
        `${at}.function.name`,
        "string_above_max_length"
      )
    }
    if (fn.description !== undefined && typeof fn.description !== "string") {
      return yield* invalidType(`${at}.function.description`, "a string", fn.description)
    }
    const parameters = fn.parameters
    if (parameters !== undefined) {
      if (!isRecord(parameters)) return yield* invalidType(`${at}.function.parameters`, "an object", parameters)
      if (parameters.type !== "object") {
        // OpenAI prints a missing type as Python's `None`.
        const got = typeof parameters.type === "string" ? parameters.type : "None"
        return yield* reject(
          `Invalid schema for function '${name}': schema must be a JSON Schema of 'type: "object"', got 'type: "${got}"'.`,
          `${at}.function.parameters`,
          "invalid_function_parameters"
        )
      }
    }
    const incomplete = parameters === undefined ? undefined : incompleteSchema(parameters, [])
    if (incomplete !== undefined) {
      return yield* reject(
        `Invalid schema for function '${name}': In context=(${incomplete.context.map((part) => `'${part}'`).join(", ")}${incomplete.context.length === 1 ? "," : ""}), ${incomplete.problem}.`,
        `${at}.function.parameters`,
        "invalid_function_parameters"
      )
    }
    const tool: ChatTool = { name, description: fn.description, parameters }
    return tool
  })

/**
 * OpenAI's refusal of a schema part it cannot use, at any depth: an object without `properties`
 * (the shape MCP servers give tools without parameters), an array without `items`. `context` is
 * the path OpenAI prints.
 */
export const incompleteSchema = (schema: unknown, context: ReadonlyArray<string>): { readonly context: ReadonlyArray<string>; readonly problem: string } | undefined => {
  if (!isRecord(schema)) return undefined
  const types = Array.isArray(schema.type) ? schema.type : [schema.type]
  if (types.includes("object") && schema.properties === undefined) return { context, problem: "object schema missing properties" }
  if (types.includes("array") && schema.items === undefined) return { context, problem: "array schema missing items" }
  const inner: Array<readonly [ReadonlyArray<string>, unknown]> = []
  for (const key of ["properties", "$defs", "definitions"]) {
    const members = schema[key]
    if (isRecord(members)) for (const [name, member] of Object.entries(members)) inner.push([[...context, key, name], member])
  }
  if (schema.items !== undefined) inner.push([[...context, "items"], schema.items])
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    const members = schema[key]
    if (Array.isArray(members)) members.forEach((member, index) => inner.push([[...context, key, String(index)], member]))
  }
  for (const [at, member] of inner) {
    const found = incompleteSchema(member, at)
    if (found !== undefined) return found
  }
  return undefined
}

/**
 * The pairing rules: every assistant message with `tool_calls` is followed directly by exactly
 * one `tool` message per call (in any order among themselves, before any other message), and
 * every `tool` message answers a call of the assistant message directly above its group.
 */
const checkToolPairing = (messages: ReadonlyArray<ChatMessage>) =>
  Either.gen(function*() {
    // The assistant message whose calls the following tool messages answer, if any.
    let answering: { readonly index: number; readonly ids: ReadonlySet<string>; readonly answered: Set<string> } | undefined
    const unanswered = () => answering === undefined ? [] : [...answering.ids].filter((id) => !answering?.answered.has(id))
    const missingResults = (ids: ReadonlyArray<string>, index: number) =>
      reject(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
          `The following tool_call_ids did not have response messages: ${ids.join(", ")}`,
        `messages.[${index}].role`
      )
    for (const [index, message] of messages.entries()) {
      if (message.role === "tool") {
        if (answering === undefined) {
          // OpenAI's message, typo included.
          return yield* reject(
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
            `messages.[${index}].role`
          )
        }
        if (!answering.ids.has(message.toolCallId)) {
          return yield* reject(
            `Invalid parameter: 'tool_call_id' of '${message.toolCallId}' not found in 'tool_calls' of previous message.`,
            `messages.[${index}].tool_call_id`
          )
        }
        if (answering.answered.has(message.toolCallId)) {
          // Our wording: each call takes exactly one result.
          return yield* reject(
            `Invalid parameter: 'tool_call_id' of '${message.toolCallId}' already has a response message; ` +
              "each 'tool_call_id' must be responded to exactly once.",
            `messages.[${index}].tool_call_id`
          )
        }
        answering.answered.add(message.toolCallId)
        continue
      }
      const open = unanswered()
      if (answering !== undefined && open.length > 0) return yield* missingResults(open, answering.index)
      answering = message.role === "assistant" && message.toolCalls.length > 0
        ? { index, ids: new Set(message.toolCalls.map((call) => call.id)), answered: new Set() }
        : undefined
    }
    const open = unanswered()
    if (answering !== undefined && open.length > 0) return yield* missingResults(open, answering.index)
  })

/**
 * Stricter than OpenAI, on purpose: a transcript calling a tool the request does not offer
 * means the engine mixed up turns or agents, so it is rejected when `tools` are given.
 */
const checkToolNames = (messages: ReadonlyArray<ChatMessage>, tools: ReadonlyArray<ChatTool>) =>
  Either.gen(function*() {
    if (tools.length === 0) return
    const offered = new Set(tools.map((tool) => tool.name))
    for (const [index, message] of messages.entries()) {
      if (message.role !== "assistant") continue
      for (const [k, call] of message.toolCalls.entries()) {
        if (!offered.has(call.name)) {
          const param = `messages[${index}].tool_calls[${k}].function.name`
          return yield* reject(
            `Invalid parameter: '${param}' is '${call.name}', which is not the name of a function in 'tools'.`,
            param
          )
        }
      }
    }
  })

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

// ---------------------------------------------------------------------------------------------
// Token estimate
// ---------------------------------------------------------------------------------------------

/** Roughly four characters per token, as OpenAI's own rule of thumb for English text. */
const tokensFor = (characters: number) => Math.ceil(characters / 4)

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

// ---------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------

/** How the fake behaves. Every field is optional. */
export interface StrictOpenAiOptions {
  /** Replies, consumed one per accepted completion request, in order. */
  readonly replies?: ReadonlyArray<ScriptStep>
  /**
   * Answers accepted requests once `replies` (and `push`ed steps) run out. Without it, an
   * exhausted script is answered with a 400 `fake_script_exhausted`, so the test fails loudly
   * and at once (a 5xx would be retried) instead of hanging or inventing an answer.
   */
  readonly otherwise?: ReplyFn
  /** Context window per model name, in estimated tokens (see `estimateTokens`). */
  readonly contextWindows?: Readonly<Record<string, number>>
  /** Models `GET /v1/models` lists, besides those in `contextWindows`. */
  readonly models?: ReadonlyArray<string>
  /** Characters per streamed text or arguments fragment; small, so everything is split. */
  readonly fragmentSize?: number
  /**
   * Refuse two user messages in a row with a 400, as the strict chat templates of compatible
   * servers do (vLLM or llama.cpp serving Mistral, Llama 2, Gemma); OpenAI accepts them.
   */
  readonly alternatingRoles?: boolean
}

/** A running fake, valid while its scope is open. */
export interface StrictOpenAi {
  /** The base URL to give the SDK, ending in `/v1`. */
  readonly url: string
  /** Every POST body received, JSON-parsed (the raw text when it was not JSON), in order. */
  readonly requests: ReadonlyArray<unknown>
  /** Every validation rejection (the 400s of `parseChatRequest`), in order. */
  readonly rejected: ReadonlyArray<OpenAiError>
  /** Appends steps to the script, e.g. to fail the next request with a 429. */
  readonly push: (...steps: ReadonlyArray<ScriptStep>) => void
}

/** The mutable state behind one server. */
interface State {
  readonly options: StrictOpenAiOptions
  readonly script: Array<ScriptStep>
  readonly requests: Array<unknown>
  readonly rejected: Array<OpenAiError>
  /** Accepted completion requests so far: the `index` given to reply functions. */
  answered: number
  /** Generated tool call ids and completion ids are numbered per server, so tests can predict them. */
  nextToolCallId: number
  nextCompletionId: number
}

const sendJson = (
  res: ServerResponse,
  status: number,
  body: unknown,
  requestId: string,
  headers: Readonly<Record<string, string>> = {}
) => {
  res.writeHead(status, { ...headers, "content-type": "application/json", "x-request-id": requestId })
  res.end(JSON.stringify(body))
}

const sendError = (
  res: ServerResponse,
  status: number,
  error: OpenAiError,
  requestId: string,
  headers?: Readonly<Record<string, string>>
) => sendJson(res, status, { error }, requestId, headers)

const sendChunks = (res: ServerResponse, chunks: ReadonlyArray<Record<string, unknown>>, requestId: string) => {
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "x-request-id": requestId })
  for (const chunk of chunks) res.write(`data: ${JSON.stringify(chunk)}\n\n`)
  res.end("data: [DONE]\n\n")
}

const usageOf = (promptTokens: number, completionTokens: number) => ({
  prompt_tokens: promptTokens,
  completion_tokens: completionTokens,
  total_tokens: promptTokens + completionTokens,
  prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
  completion_tokens_details: {
    reasoning_tokens: 0,
    audio_tokens: 0,
    accepted_prediction_tokens: 0,
    rejected_prediction_tokens: 0
  }
})

/** Splits by code points, so a fragment never ends in half a surrogate pair. */
const fragments = (value: string, size: number): ReadonlyArray<string> => {
  const points = Array.from(value)
  const out: Array<string> = []
  for (let i = 0; i < points.length; i += size) out.push(points.slice(i, i + size).join(""))
  return out
}

/** A successful answer, with ids assigned and usage decided. */
interface Completion {
  readonly id: string
  readonly text: string
  readonly calls: ReadonlyArray<ChatToolCall>
  readonly promptTokens: number
  readonly completionTokens: number
}

const complete = (
  state: State,
  request: ChatRequest,
  reply: Extract<Reply, { readonly _tag: "Text" | "ToolCalls" }>
): Completion => {
  const replyText = reply.text ?? ""
  const calls = reply._tag === "ToolCalls"
    ? reply.calls.map((call) => ({ id: call.id ?? `call_${++state.nextToolCallId}`, name: call.name, arguments: call.arguments }))
    : []
  const outputCharacters = replyText.length + calls.reduce((n, call) => n + call.name.length + call.arguments.length, 0)
  return {
    id: `chatcmpl-fake${++state.nextCompletionId}`,
    text: replyText,
    calls,
    promptTokens: reply.usage?.promptTokens ?? estimateTokens(request),
    // At least one token: a real model always produces something, even just the stop token.
    completionTokens: reply.usage?.completionTokens ?? Math.max(1, tokensFor(outputCharacters))
  }
}

const finishReason = (completion: Completion) => completion.calls.length > 0 ? "tool_calls" : "stop"

const sendCompletion = (res: ServerResponse, request: ChatRequest, completion: Completion, requestId: string) =>
  sendJson(res, 200, {
    id: completion.id,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: request.model,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        // OpenAI sends `null`, not `""`, when the model only calls tools.
        content: completion.text.length === 0 && completion.calls.length > 0 ? null : completion.text,
        refusal: null,
        annotations: [],
        ...(completion.calls.length === 0 ? {} : {
          tool_calls: completion.calls.map((call) => ({
            id: call.id,
            type: "function",
            function: { name: call.name, arguments: call.arguments }
          }))
        })
      },
      logprobs: null,
      finish_reason: finishReason(completion)
    }],
    usage: usageOf(completion.promptTokens, completion.completionTokens),
    service_tier: "default",
    system_fingerprint: "fp_strictfake"
  }, requestId)

/** The deltas of a streamed answer, in OpenAI's order: role, text pieces, then each call's fragments. */
const deltasOf = (completion: Completion, fragmentSize: number): ReadonlyArray<Record<string, unknown>> => {
  const deltas: Array<Record<string, unknown>> = []
  for (const piece of fragments(completion.text, fragmentSize)) deltas.push({ content: piece })
  for (const [index, call] of completion.calls.entries()) {
    // The first fragment names the call; later ones carry only its index and more arguments.
    deltas.push({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] })
    for (const piece of fragments(call.arguments, fragmentSize)) {
      deltas.push({ tool_calls: [{ index, function: { arguments: piece } }] })
    }
  }
  const [first, ...rest] = deltas
  // OpenAI opens a text answer with an empty `content` delta, and folds the role into the first
  // tool call fragment of an answer that only calls tools.
  if (completion.text.length > 0 || first === undefined) {
    return [{ role: "assistant", content: "", refusal: null }, ...deltas]
  }
  return [{ role: "assistant", content: null, refusal: null, ...first }, ...rest]
}

const sendStream = (
  res: ServerResponse,
  request: ChatRequest,
  completion: Completion,
  fragmentSize: number,
  requestId: string
) => {
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    "x-request-id": requestId
  })
  const header = {
    id: completion.id,
    object: "chat.completion.chunk",
    created: Math.floor(Date.now() / 1000),
    model: request.model,
    service_tier: "default",
    system_fingerprint: "fp_strictfake"
  }
  // With `include_usage`, every chunk carries `usage: null` until the usage chunk.
  const usageField = request.includeUsage ? { usage: null } : {}
  const send = (event: unknown) => res.write(`data: ${JSON.stringify(event)}\n\n`)
  const chunk = (delta: Record<string, unknown>, finish: string | null) => ({
    ...header,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...usageField
  })
  for (const delta of deltasOf(completion, fragmentSize)) send(chunk(delta, null))
  send(chunk({}, finishReason(completion)))
  if (request.includeUsage) {
    send({ ...header, choices: [], usage: usageOf(completion.promptTokens, completion.completionTokens) })
  }
  res.end("data: [DONE]\n\n")
}

const scriptError = (message: string, code: string): OpenAiError => ({
  message: `Strict fake OpenAI: ${message}`,
  type: "invalid_request_error",
  param: null,
  code
})

/** The next scripted reply for an accepted request. */
const nextReply = (state: State, request: ChatRequest): Reply => {
  const index = state.answered++
  const step = state.script.shift()
  const resolve = step ?? state.options.otherwise
  if (resolve === undefined) {
    return {
      _tag: "Error",
      status: 400,
      error: scriptError(`no reply scripted for completion request ${index}.`, "fake_script_exhausted")
    }
  }
  if (typeof resolve !== "function") return resolve
  try {
    return resolve(request, index)
  } catch (cause) {
    // A throwing reply function is a bug in the test; report it through the response.
    const detail = cause instanceof Error ? cause.message : String(cause)
    return { _tag: "Error", status: 400, error: scriptError(`the reply function threw: ${detail}`, "fake_script_error") }
  }
}

const handleCompletion = (state: State, res: ServerResponse, body: unknown, requestId: string) => {
  const parsed = parseChatRequest(body)
  if (Either.isLeft(parsed)) {
    state.rejected.push(parsed.left)
    return sendError(res, 400, parsed.left, requestId)
  }
  const request = parsed.right
  const together = state.options.alternatingRoles === true
    ? request.messages.findIndex((message, i) => i > 0 && message.role === "user" && request.messages[i - 1]?.role === "user")
    : -1
  if (together !== -1) {
    const problem: OpenAiError = {
      message: "Conversation roles must alternate user/assistant/user/assistant/...",
      type: "BadRequestError",
      param: null,
      code: null
    }
    state.rejected.push(problem)
    return sendError(res, 400, problem, requestId)
  }
  const window = state.options.contextWindows?.[request.model]
  const tokens = estimateTokens(request)
  if (window !== undefined && tokens > window) {
    return sendError(res, 400, contextLengthError(window, tokens), requestId)
  }
  const reply = nextReply(state, request)
  if (reply._tag === "Error") return sendError(res, reply.status, reply.error, requestId, reply.headers)
  if (reply._tag === "Chunks") return sendChunks(res, reply.chunks, requestId)
  const completion = complete(state, request, reply)
  if (request.stream) return sendStream(res, request, completion, state.options.fragmentSize ?? 4, requestId)
  return sendCompletion(res, request, completion, requestId)
}

const listModels = (state: State, res: ServerResponse, requestId: string) => {
  const names = new Set([...(state.options.models ?? ["gpt-4.1-mini"]), ...Object.keys(state.options.contextWindows ?? {})])
  sendJson(res, 200, {
    object: "list",
    data: [...names].map((id) => ({ id, object: "model", created: 1_700_000_000, owned_by: "system" }))
  }, requestId)
}

const missingKey: OpenAiError = {
  message: "You didn't provide an API key. You need to provide your API key in an Authorization header using " +
    "Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're " +
    "accessing the API from your browser and are prompted for a username and password. You can obtain an API key " +
    "from https://platform.openai.com/account/api-keys.",
  type: "invalid_request_error",
  param: null,
  code: null
}

const unparsableBody: OpenAiError = {
  message: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP " +
    "library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have " +
    "trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)",
  type: "invalid_request_error",
  param: null,
  code: null
}

const handle = (state: State, req: IncomingMessage, res: ServerResponse, raw: string) => {
  const requestId = `req_fake${state.requests.length + 1}`
  const path = (req.url ?? "/").split("?")[0]
  const route = `${req.method} ${path}`
  let body: unknown = undefined
  if (req.method === "POST") {
    try {
      body = JSON.parse(raw)
      state.requests.push(body)
    } catch {
      state.requests.push(raw)
      return sendError(res, 400, unparsableBody, requestId)
    }
  }
  if (route !== "POST /v1/chat/completions" && route !== "GET /v1/models") {
    return sendError(res, 404, {
      message: `Invalid URL (${route})`,
      type: "invalid_request_error",
      param: null,
      code: null
    }, requestId)
  }
  if (!/^Bearer \S+/.test(req.headers.authorization ?? "")) return sendError(res, 401, missingKey, requestId)
  if (route === "GET /v1/models") return listModels(state, res, requestId)
  return handleCompletion(state, res, body, requestId)
}


/** Starts the strict fake; it stops when the scope closes. */
export const strictOpenAi = (options: StrictOpenAiOptions = {}): Effect.Effect<StrictOpenAi, never, Scope.Scope> =>
  Effect.gen(function*() {
    const state: State = {
      options,
      script: [...(options.replies ?? [])],
      requests: [],
      rejected: [],
      answered: 0,
      nextToolCallId: 0,
      nextCompletionId: 0
    }
    const server = yield* Effect.acquireRelease(
      Effect.sync(() =>
        createServer((req, res) => {
          let raw = ""
          req.setEncoding("utf8")
          req.on("data", (piece: string) => {
            raw += piece
          })
          req.on("end", () => handle(state, req, res, raw))
        })
      ),
      close
    )
    const port = yield* Effect.orDie(listen(server))
    const fake: StrictOpenAi = {
      url: `http://127.0.0.1:${port}/v1`,
      requests: state.requests,
      rejected: state.rejected,
      push: (...steps) => {
        state.script.push(...steps)
      }
    }
    return fake
  })
