/** The strict fake's wire types: OpenAI's error object, and a validated request as tests read it. */
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
