/** The strict fake's answers on the wire: errors, completions, and streams chunked as OpenAI chunks them. */
import type { ServerResponse } from "node:http"
import type { Reply } from "./replies.js"
import type { State } from "./state.js"
import { estimateTokens, tokensFor } from "./tokens.js"
import type { ChatRequest, ChatToolCall, OpenAiError } from "./wire.js"

export const sendJson = (
  res: ServerResponse,
  status: number,
  body: unknown,
  requestId: string,
  headers: Readonly<Record<string, string>> = {}
) => {
  res.writeHead(status, { ...headers, "content-type": "application/json", "x-request-id": requestId })
  res.end(JSON.stringify(body))
}

export const sendError = (
  res: ServerResponse,
  status: number,
  error: OpenAiError,
  requestId: string,
  headers?: Readonly<Record<string, string>>
) => sendJson(res, status, { error }, requestId, headers)

export const sendChunks = (res: ServerResponse, chunks: ReadonlyArray<Record<string, unknown>>, requestId: string) => {
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "x-request-id": requestId })
  for (const chunk of chunks) res.write(`data: ${JSON.stringify(chunk)}\n\n`)
  res.end("data: [DONE]\n\n")
}

const usageOf = (promptTokens: number, completionTokens: number, cachedTokens: number) => ({
  prompt_tokens: promptTokens,
  completion_tokens: completionTokens,
  total_tokens: promptTokens + completionTokens,
  prompt_tokens_details: { cached_tokens: cachedTokens, audio_tokens: 0 },
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
  readonly cachedTokens: number
}

export const complete = (
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
    completionTokens: reply.usage?.completionTokens ?? Math.max(1, tokensFor(outputCharacters)),
    cachedTokens: reply.usage?.cachedTokens ?? 0
  }
}

const finishReason = (completion: Completion) => completion.calls.length > 0 ? "tool_calls" : "stop"

export const sendCompletion = (res: ServerResponse, request: ChatRequest, completion: Completion, requestId: string) =>
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
    usage: usageOf(completion.promptTokens, completion.completionTokens, completion.cachedTokens),
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

export const sendStream = (
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
    send({ ...header, choices: [], usage: usageOf(completion.promptTokens, completion.completionTokens, completion.cachedTokens) })
  }
  res.end("data: [DONE]\n\n")
}
