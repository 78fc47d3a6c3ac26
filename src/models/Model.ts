/**
 * The Model service: one streamed model turn, behind one interface that the `openai`, `demo`
 * and `scripted` implementations share. The engine never knows which one it talks to.
 */
import { Context, type Effect, Schema, type Stream } from "effect"

/** A tool call as the model asked for it: `arguments` is the raw JSON text the model produced. */
export const ToolCall = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  arguments: Schema.String
})
export type ToolCall = typeof ToolCall.Type

/** An image a tool handed the model (`view_image`, an MCP tool's image): its media type and its bytes in base64. */
export const ImageContent = Schema.Struct({ mediaType: Schema.String, data: Schema.String })
export type ImageContent = typeof ImageContent.Type

/**
 * One message of a conversation transcript. `summary` is a compaction: it stands for every
 * message stored before `keepFrom` (a message `seq`); the engine shows it to models as a user
 * message, so adapters only ever see `user`, `assistant` and `tool`.
 */
export const ChatMessage = Schema.Union(
  Schema.TaggedStruct("user", { content: Schema.String }),
  Schema.TaggedStruct("assistant", { content: Schema.String, toolCalls: Schema.Array(ToolCall) }),
  Schema.TaggedStruct("tool", {
    toolCallId: Schema.String,
    name: Schema.String,
    content: Schema.String,
    /** Images the tool showed the model; only a run whose every model accepts images is given them. */
    images: Schema.optional(Schema.Array(ImageContent))
  }),
  Schema.TaggedStruct("summary", { content: Schema.String, keepFrom: Schema.Number })
)
export type ChatMessage = typeof ChatMessage.Type

/** A tool as offered to the model: its name, what it is for, and its input as JSON Schema. */
export interface ToolSpec {
  readonly name: string
  readonly description: string
  readonly parameters: Record<string, unknown>
}

/** The longest tool description OpenAI takes: a longer one is a 400 on every turn that offers it. */
export const maxToolDescriptionLength = 1024

/** What the engine asks of a model for one turn. */
export interface ModelRequest {
  readonly system: string
  readonly messages: ReadonlyArray<ChatMessage>
  readonly tools: ReadonlyArray<ToolSpec>
}

/** A piece of a streamed model turn. */
export type ModelChunk =
  | { readonly _tag: "TextDelta"; readonly text: string }
  | { readonly _tag: "ToolCall"; readonly call: ToolCall }
  | {
    readonly _tag: "Usage"
    readonly inputTokens: number
    readonly outputTokens: number
    /** Of `inputTokens`, those the provider served from its prompt cache (billed at its cached rate). */
    readonly cachedInputTokens?: number
  }

/**
 * A model failure, classified: `transient` ones (429, 5xx, network, timeout) are worth a retry,
 * `permanent` ones are not and fail the run with `message`.
 */
export class ModelError extends Schema.TaggedError<ModelError>()("ModelError", {
  model: Schema.String,
  kind: Schema.Literal("transient", "permanent"),
  status: Schema.optional(Schema.Number),
  message: Schema.String,
  /**
   * The provider's error code (`rate_limit_exceeded`, `context_length_exceeded`), or its error
   * type when it gives no code as text (llama.cpp's `exceed_context_size_error`).
   */
  code: Schema.optional(Schema.String),
  /** How long the provider asked to wait before trying again (`retry-after`), in milliseconds. */
  retryAfter: Schema.optional(Schema.Number),
  /** Where it asked it: `retry-after`, `x-ratelimit-reset-tokens`, `error message`… (told when the retry waits for it). */
  retryAfterFrom: Schema.optional(Schema.String)
}) {}

/** A language model: one streamed turn per call. */
export interface LanguageModel {
  /** The name shown in events and in the inspector, e.g. `openai:gpt-4.1-mini` or `demo`. */
  readonly name: string
  /** Whether it accepts images (then an environment's agent gets `view_image`, and MCP tools' images are shown). */
  readonly vision?: boolean
  /**
   * The most tools it takes in one request (OpenAI: 128; a request with more is a 400): a turn
   * that would offer more fails saying so. `undefined`: no limit known.
   */
  readonly maxTools?: number
  readonly stream: (request: ModelRequest) => Stream.Stream<ModelChunk, ModelError>
  /**
   * The whole turn at once, for a model that has all of it before the first chunk (an in-process
   * model such as `demo` or a scripted one): the engine folds the chunks without a stream, which
   * costs a fraction of running one. `undefined` for a request means that turn is streamed.
   */
  readonly complete?: (request: ModelRequest) => Effect.Effect<ReadonlyArray<ModelChunk>, ModelError> | undefined
}

/**
 * Turns an agent's `model` field into a `LanguageModel`. The default layer knows `demo` and
 * `openai:<model>`; tests provide their own to run every agent on a scripted model.
 */
export class ModelResolver extends Context.Tag("foundry/ModelResolver")<ModelResolver, {
  readonly resolve: (spec: string) => ResolvedModel
  /** A line for the dev banner, e.g. why `openai:*` agents run on the demo model. */
  readonly notice: string | undefined
}>() {}

/** The model an agent runs on, with a note when it is not the one the agent asked for. */
export interface ResolvedModel {
  readonly model: LanguageModel
  readonly fallbackFrom?: string
}

/**
 * The model an agent that asks for `spec` runs on instead, and why (the demo model without an
 * OpenAI key); `undefined` when it runs on the one it asks for.
 */
export const runsOnInstead = (
  models: ModelResolver["Type"],
  spec: string
): { readonly model: string; readonly reason: string } | undefined => {
  const resolved = models.resolve(spec)
  return resolved.fallbackFrom === undefined
    ? undefined
    : { model: resolved.model.name, reason: models.notice ?? `${spec} is not available here` }
}
