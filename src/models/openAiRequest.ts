/**
 * The OpenAI adapter's request mapping: the engine's transcript as Chat Completions messages, in
 * the shape OpenAI and the stricter compatible servers accept.
 */
import type OpenAI from "openai"
import type { ChatMessage, ImageContent, ModelRequest, ToolSpec } from "./Model.js"

/** The request's system prompt and transcript as the messages of a Chat Completions request. */
export const toOpenAiMessages = (request: ModelRequest): Array<OpenAI.ChatCompletionMessageParam> => {
  const system: Array<OpenAI.ChatCompletionMessageParam> = request.system.length > 0
    ? [{ role: "system", content: request.system }]
    : []
  const asCalls = request.tools.length > 0 ? toOpenAiMessage : toTextMessage
  return [...system, ...alternating(withImages(request.messages).map(asCalls))]
}

/**
 * A message as it is sent when the request offers no tools (an agent whose tools a deploy took
 * away, whose history still holds their calls): calls and results told as text, an assistant's
 * calls in its message and each result as a user message. LiteLLM in front of Bedrock or
 * Anthropic refuses a history with tool calls and no `tools` ("tools must be provided when
 * messages contain tool calls"), and offering tools the agent no longer has would let the model
 * call them; as text, the model still reads what was done and what came of it.
 */
const toTextMessage = (message: ChatMessage | ImageMessage): OpenAI.ChatCompletionMessageParam => {
  if (message._tag === "assistant" && message.toolCalls.length > 0) {
    const calls = message.toolCalls.map((call) => `[called the tool ${call.name} (call ${call.id}) with ${sendableArguments(call.arguments)}]`)
    return { role: "assistant", content: [message.content, ...calls].filter((line) => line.length > 0).join("\n") }
  }
  if (message._tag === "tool") {
    return { role: "user", content: `[the result of the tool ${message.name} (call ${message.toolCallId}); the tool is no longer offered]\n${message.content}` }
  }
  return toOpenAiMessage(message)
}

/**
 * Adjacent user messages (a cancelled run's message then the next one, a compaction's summary then
 * the message after it) joined into one, a blank line between their texts; so are adjacent
 * assistant messages (a run resumed after an approval answers after a later run's answer, both
 * stored in that order). OpenAI takes them apart, but the strict chat templates of compatible
 * servers (Mistral, Llama 2 or Gemma on vLLM or llama.cpp) refuse the whole request: "Conversation
 * roles must alternate". Only what is sent is joined; the transcript keeps every message.
 */
const alternating = (
  messages: ReadonlyArray<OpenAI.ChatCompletionMessageParam>
): Array<OpenAI.ChatCompletionMessageParam> => {
  const out: Array<OpenAI.ChatCompletionMessageParam> = []
  for (const message of messages) {
    const last = out[out.length - 1]
    if (message.role === "user" && last?.role === "user") {
      out[out.length - 1] = { role: "user", content: joinContent(last.content, message.content) }
    } else if (message.role === "assistant" && last?.role === "assistant" && (last.tool_calls ?? []).length === 0) {
      // An assistant's calls are followed by their results, so the first of two in a row has none.
      const content = [assistantText(last.content), assistantText(message.content)].filter((text) => text.length > 0).join("\n\n")
      out[out.length - 1] = message.tool_calls === undefined
        ? { role: "assistant", content }
        : { role: "assistant", content: content.length > 0 ? content : null, tool_calls: message.tool_calls }
    } else {
      out.push(message)
    }
  }
  return out
}

/** An assistant message's text, as this adapter sends it (a string, or none next to tool calls). */
const assistantText = (content: OpenAI.ChatCompletionAssistantMessageParam["content"]): string =>
  typeof content === "string"
    ? content
    : (content ?? []).map((part) => part.type === "text" ? part.text : part.refusal).join("")

type UserContent = OpenAI.ChatCompletionUserMessageParam["content"]

/** Two user contents as one: joined text, or the parts of both when either has images. */
const joinContent = (first: UserContent, second: UserContent): UserContent =>
  typeof first === "string" && typeof second === "string"
    ? `${first}\n\n${second}`
    : [...asParts(first), ...asParts(second)]

const asParts = (content: UserContent): Array<OpenAI.ChatCompletionContentPart> =>
  typeof content === "string" ? [{ type: "text", text: content }] : [...content]

/** A user message carrying the images that tools showed the model. */
type ImageMessage = { readonly _tag: "images"; readonly images: ReadonlyArray<LabelledImage> }

/** An image, and the line before it saying which call showed it (and which of its images it is, as the call's text numbers them). */
type LabelledImage = { readonly label: string; readonly image: ImageContent }

/**
 * Chat Completions takes images in user messages only, and a user message may not come between an
 * assistant's tool calls and their results: the images of a run of tool results follow it, in one
 * user message.
 */
const withImages = (messages: ReadonlyArray<ChatMessage>): ReadonlyArray<ChatMessage | ImageMessage> => {
  const out: Array<ChatMessage | ImageMessage> = []
  let pending: Array<LabelledImage> = []
  const flush = () => {
    if (pending.length > 0) out.push({ _tag: "images", images: pending })
    pending = []
  }
  for (const message of messages) {
    if (message._tag !== "tool") flush()
    out.push(message)
    if (message._tag === "tool") {
      const { images = [], toolCallId } = message
      pending.push(...images.map((image, i) => ({
        label: images.length === 1 ? `The image shown by tool call ${toolCallId}:` : `Image ${i + 1} of ${images.length} shown by tool call ${toolCallId}:`,
        image
      })))
    }
  }
  flush()
  return out
}

const toOpenAiMessage = (message: ChatMessage | ImageMessage): OpenAI.ChatCompletionMessageParam => {
  switch (message._tag) {
    case "images":
      return {
        role: "user",
        content: message.images.flatMap(({ image, label }): Array<OpenAI.ChatCompletionContentPart> => [
          { type: "text", text: label },
          { type: "image_url", image_url: { url: `data:${image.mediaType};base64,${image.data}` } }
        ])
      }
    case "user":
      return { role: "user", content: message.content }
    case "assistant":
      return message.toolCalls.length === 0
        ? { role: "assistant", content: message.content }
        : {
          role: "assistant",
          // The API wants `null` rather than `""` next to tool calls.
          content: message.content.length > 0 ? message.content : null,
          tool_calls: message.toolCalls.map((call) => ({
            id: call.id,
            type: "function",
            function: { name: call.name, arguments: sendableArguments(call.arguments) }
          }))
        }
    case "tool":
      return { role: "tool", tool_call_id: message.toolCallId, content: message.content }
    case "summary":
      return { role: "user", content: message.content }
  }
}

/**
 * A tool call's arguments as the history may carry them: re-serialised when they are a JSON
 * object, else `{}`. The transcript keeps what the model produced, also arguments it was cut off
 * in; servers that parse the history (vLLM, llama-server) answer 400 to those on every later turn,
 * and the call's result already tells the model its arguments were invalid.
 */
const sendableArguments = (raw: string): string => {
  try {
    const parsed: unknown = JSON.parse(raw)
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? JSON.stringify(parsed) : "{}"
  } catch {
    return "{}"
  }
}

/** A tool as a Chat Completions function tool. */
export const toOpenAiTool = (tool: ToolSpec): OpenAI.ChatCompletionFunctionTool => ({
  type: "function",
  function: { name: tool.name, description: tool.description, parameters: tool.parameters }
})
