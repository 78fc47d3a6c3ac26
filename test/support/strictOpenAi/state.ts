/** The strict fake's options, its handle for tests, and the state behind one server. */
import type { ReplyFn, ScriptStep } from "./replies.js"
import type { OpenAiError } from "./wire.js"

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
  /**
   * Refuse a history with tool calls or results when the request offers no `tools`, as LiteLLM
   * in front of Bedrock or Anthropic does; OpenAI accepts it.
   */
  readonly toolsForToolCalls?: boolean
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
export interface State {
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
