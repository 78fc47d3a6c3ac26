/**
 * What `/v1` answers, in OpenAI's exact shapes: a `chat.completion`, the `chat.completion.chunk`s
 * of a streamed one, and the model list. The schemas are the OpenAPI document's; the builders
 * below are what the handlers send.
 */
import { Schema } from "effect"

/** Tokens a completion used: the run's model turns, summed. */
export const CompletionUsage = Schema.Struct({
  prompt_tokens: Schema.Number,
  completion_tokens: Schema.Number,
  total_tokens: Schema.Number
}).annotations({ identifier: "CompletionUsage" })
export type CompletionUsage = typeof CompletionUsage.Type

/** A non-streamed completion. */
export const ChatCompletion = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("chat.completion"),
  created: Schema.Number,
  model: Schema.String,
  system_fingerprint: Schema.Null,
  choices: Schema.Tuple(Schema.Struct({
    index: Schema.Literal(0),
    message: Schema.Struct({
      role: Schema.Literal("assistant"),
      content: Schema.String,
      refusal: Schema.Null,
      annotations: Schema.Tuple()
    }),
    logprobs: Schema.Null,
    finish_reason: Schema.Literal("stop")
  })),
  usage: CompletionUsage
}).annotations({ identifier: "ChatCompletion" })
export type ChatCompletion = typeof ChatCompletion.Type

/** One chunk of a streamed completion; `usage` is `null` except on the last chunk of a stream that asked for it. */
export const ChatCompletionChunk = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("chat.completion.chunk"),
  created: Schema.Number,
  model: Schema.String,
  system_fingerprint: Schema.Null,
  choices: Schema.Array(Schema.Struct({
    index: Schema.Literal(0),
    delta: Schema.Struct({ role: Schema.optional(Schema.Literal("assistant")), content: Schema.optional(Schema.String) }),
    logprobs: Schema.Null,
    finish_reason: Schema.NullOr(Schema.Literal("stop"))
  })),
  usage: Schema.optional(Schema.NullOr(CompletionUsage))
}).annotations({ identifier: "ChatCompletionChunk" })
export type ChatCompletionChunk = typeof ChatCompletionChunk.Type

/** An agent, or one instance of it (`agent@instance`), as a model. */
export const ModelEntry = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("model"),
  created: Schema.Number,
  owned_by: Schema.Literal("foundry")
})

/** `GET /v1/models`. */
export const ModelList = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(ModelEntry)
}).annotations({ identifier: "ModelList" })
export type ModelList = typeof ModelList.Type

/** Who a completion is: its id (`chatcmpl-<run id>`), when it was made (seconds) and the model asked for. */
export interface CompletionIdentity {
  readonly id: string
  readonly created: number
  readonly model: string
}

/** The whole completion. */
export const completion = (identity: CompletionIdentity, content: string, usage: CompletionUsage): ChatCompletion => ({
  ...identity,
  object: "chat.completion",
  system_fingerprint: null,
  choices: [{
    index: 0,
    message: { role: "assistant", content, refusal: null, annotations: [] },
    logprobs: null,
    finish_reason: "stop"
  }],
  usage
})

/** The pieces of a streamed completion; with `withUsage`, every chunk carries `usage: null` until the last, as OpenAI sends them. */
export const chunks = (identity: CompletionIdentity, withUsage: boolean) => {
  const make = (choices: ChatCompletionChunk["choices"], usage: CompletionUsage | null = null): ChatCompletionChunk => ({
    ...identity,
    object: "chat.completion.chunk",
    system_fingerprint: null,
    choices,
    ...(withUsage ? { usage } : {})
  })
  return {
    /** The first chunk: the role, no text yet. */
    start: make([{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }]),
    text: (content: string) => make([{ index: 0, delta: { content }, logprobs: null, finish_reason: null }]),
    stop: make([{ index: 0, delta: {}, logprobs: null, finish_reason: "stop" }]),
    /** After `stop`, only when the client asked for it: no choices, the usage. */
    usage: (usage: CompletionUsage) => make([], usage)
  }
}

/** The run's token totals as OpenAI counts them. */
export const usageOf = (run: { readonly inputTokens: number; readonly outputTokens: number }): CompletionUsage => ({
  prompt_tokens: run.inputTokens,
  completion_tokens: run.outputTokens,
  total_tokens: run.inputTokens + run.outputTokens
})
