/**
 * The body of `POST /v1/chat/completions` as Foundry reads it: OpenAI's fields that mean something
 * for an agent (the model, the messages, streaming), text content only. Other fields OpenAI
 * defines (`temperature`, `tools`, `user`, ...) are accepted and ignored: the agent's file decides its model
 * settings and tools. Those whose client counts on an answer an agent does not give (`n` above 1, a
 * tool call demanded by `tool_choice`, JSON by `response_format`) are refused, not ignored.
 */
import { Schema } from "effect"

/** A text part of a message's content. */
const TextPart = Schema.Struct({
  type: Schema.Literal("text").annotations({
    message: () => "only text content parts are supported: send { \"type\": \"text\", \"text\": \"...\" }"
  }),
  text: Schema.String
})

/** A message's content: a string, or text parts (joined with newlines). */
const Content = Schema.Union(Schema.String, Schema.Array(TextPart)).annotations({
  message: () => "expected a string, or an array of { \"type\": \"text\", \"text\": \"...\" } parts"
})
export type Content = typeof Content.Type

/** A part of an assistant message's content that refused the request (OpenAI's answers may hold one). */
const RefusalPart = Schema.Struct({ type: Schema.Literal("refusal"), refusal: Schema.String })

/** An assistant message's content, as a client replays it: text, or text and refusal parts. */
const AssistantContent = Schema.Union(Schema.String, Schema.Array(Schema.Union(TextPart, RefusalPart))).annotations({
  message: () => "expected a string, or an array of { \"type\": \"text\", \"text\": \"...\" } or { \"type\": \"refusal\", \"refusal\": \"...\" } parts"
})
export type AssistantContent = typeof AssistantContent.Type

/** A call an assistant message made (function tools only, as OpenAI sends them). */
const AssistantToolCall = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal("function"),
  function: Schema.Struct({ name: Schema.String, arguments: Schema.String })
})

// One member per role, each with a single literal: the union then decodes a message by its role
// alone, and a wrong field is reported for that role only.
const SystemMessage = Schema.Struct({ role: Schema.Literal("system"), content: Content })
const DeveloperMessage = Schema.Struct({ role: Schema.Literal("developer"), content: Content })
const UserMessage = Schema.Struct({ role: Schema.Literal("user"), content: Content })
const AssistantMessage = Schema.Struct({
  role: Schema.Literal("assistant"),
  content: Schema.optional(Schema.NullOr(AssistantContent)),
  // OpenAI's answer says a refusal here, beside a null content; a client replays the message as it came.
  refusal: Schema.optional(Schema.NullOr(Schema.String)),
  tool_calls: Schema.optional(Schema.NullOr(Schema.Array(AssistantToolCall)))
})
const ToolMessage = Schema.Struct({ role: Schema.Literal("tool"), content: Content, tool_call_id: Schema.String })

/** One message of the request. */
export const RequestMessage = Schema.Union(SystemMessage, DeveloperMessage, UserMessage, AssistantMessage, ToolMessage)
export type RequestMessage = typeof RequestMessage.Type

/** The request body. */
export const ChatCompletionRequest = Schema.Struct({
  model: Schema.String.pipe(Schema.nonEmptyString({
    message: () => "expected an agent id, or \"<agent>@<instance>\" (GET /v1/models lists them)"
  })),
  messages: Schema.Array(RequestMessage).pipe(Schema.minItems(1, {
    message: () => "expected at least one message; the last one is the user's message the agent answers"
  })),
  stream: Schema.optional(Schema.NullOr(Schema.Boolean)),
  stream_options: Schema.optional(Schema.NullOr(Schema.Struct({ include_usage: Schema.optional(Schema.NullOr(Schema.Boolean)) }))),
  n: Schema.optional(Schema.NullOr(Schema.Literal(1).annotations({
    message: () => "an agent gives one answer: omit n or set it to 1"
  }))),
  // Each literal says it: an optional field's union is flattened, and an annotation on it would be lost.
  tool_choice: Schema.optional(Schema.NullOr(Schema.Union(...(["auto", "none"] as const).map((choice) =>
    Schema.Literal(choice).annotations({
      message: () => "an agent calls the tools its file lists when it decides to, and cannot be made to: omit tool_choice or set it to \"auto\""
    })
  )))),
  response_format: Schema.optional(Schema.NullOr(Schema.Struct({
    type: Schema.Literal("text").annotations({
      message: () => "an agent answers in text, as its instructions say: omit response_format or set it to { \"type\": \"text\" }"
    })
  })))
}).annotations({
  identifier: "ChatCompletionRequest",
  description: "OpenAI's chat completion request; fields not listed (temperature, tools, ...) are accepted and ignored"
})
export type ChatCompletionRequest = typeof ChatCompletionRequest.Type

/** A message's content as text; a refusal part as what it says. */
export const contentText = (content: AssistantContent | null | undefined): string =>
  content === null || content === undefined
    ? ""
    : typeof content === "string"
    ? content
    : content.map((part) => part.type === "text" ? part.text : part.refusal).join("\n")
