/**
 * `/v1`: the OpenAI-compatible API, declared for the OpenAPI document. The handlers read the body
 * themselves (see `OpenAiLive`), so that every refusal is in OpenAI's error shape.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi, OpenApiJsonSchema } from "@effect/platform"
import { Schema } from "effect"
import { ChatCompletion, ChatCompletionChunk, ModelEntry, ModelList } from "./ChatCompletion.js"
import { ChatCompletionRequest } from "./ChatCompletionRequest.js"
import { conversationHeader } from "./chatTurn.js"
import { OpenAiErrorBody } from "./OpenAiError.js"

/** The event stream `stream: true` answers with, beside the JSON completion, in the 200 response. */
const withEventStream = (operation: Record<string, unknown>): Record<string, unknown> => {
  const responses = operation.responses
  if (typeof responses !== "object" || responses === null || !("200" in responses)) return operation
  const ok = responses["200"]
  if (typeof ok !== "object" || ok === null) return operation
  // `CompletionUsage` is in the document's components already: the JSON completion refers to it.
  const chunk = OpenApiJsonSchema.makeWithDefs(ChatCompletionChunk, {
    defs: {},
    defsPath: "#/components/schemas/",
    topLevelReferenceStrategy: "skip"
  })
  const content = "content" in ok && typeof ok.content === "object" ? ok.content : {}
  return {
    ...operation,
    responses: {
      ...responses,
      "200": {
        ...ok,
        description: "The completion; with `stream: true`, server-sent events: one `data: <chat.completion.chunk>` " +
          "line per chunk (the role, the text as the run writes it, `finish_reason`, and with " +
          "`stream_options.include_usage` a last chunk with no choices and the usage), then `data: [DONE]`. " +
          "A run that fails after the stream began sends `data: {\"error\": {...}}` instead.",
        content: { ...content, "text/event-stream": { schema: chunk } }
      }
    }
  }
}

/** The OpenAI-compatible group. */
export class OpenAiGroup extends HttpApiGroup.make("openai")
  .add(
    HttpApiEndpoint.get("models", "/v1/models")
      .addSuccess(ModelList)
      .addError(OpenAiErrorBody, { status: 503 })
      .annotate(OpenApi.Description, "Every agent of the current build as a model, and `<agent>@<instance>` for each instance that is not archived.")
  )
  .add(
    HttpApiEndpoint.get("model", "/v1/models/:model")
      .setPath(Schema.Struct({ model: Schema.String }))
      .addSuccess(ModelEntry)
      .addError(OpenAiErrorBody, { status: 404 })
      .addError(OpenAiErrorBody, { status: 503 })
      .annotate(OpenApi.Description, "One model of the list (an agent id with a slash is sent encoded, as OpenAI's clients do).")
  )
  .add(
    HttpApiEndpoint.post("chatCompletions", "/v1/chat/completions")
      .setPayload(ChatCompletionRequest)
      .setHeaders(Schema.Struct({
        [conversationHeader]: Schema.optional(Schema.String).annotations({
          description: "The conversation to continue (created under that id when new); the response names it in the same header"
        }),
        "idempotency-key": Schema.optional(Schema.String).annotations({
          description: "One run per key: a request repeated with it (a client's retry after a timeout) is answered by the first one's run"
        })
      }))
      .addSuccess(ChatCompletion)
      .addError(OpenAiErrorBody, { status: 400 })
      .addError(OpenAiErrorBody, { status: 404 })
      .addError(OpenAiErrorBody, { status: 500 })
      .addError(OpenAiErrorBody, { status: 503 })
      .annotate(
        OpenApi.Description,
        "A message to an agent (`model`: `<agent>` or `<agent>@<instance>`), answered by one durable run. " +
          `With the \`${conversationHeader}\` header, the server keeps the conversation and only the last ` +
          "message is new; without it, the messages are taken as given, as OpenAI takes them (earlier ones seed a new conversation)."
      )
      .annotate(OpenApi.Transform, withEventStream)
  )
  .annotate(OpenApi.Description, "OpenAI-compatible: point any OpenAI client at `<server>/v1`")
{}
