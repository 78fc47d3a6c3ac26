/**
 * Keeping a conversation inside its model's context window. Two thresholds of the window:
 * - soft (60% by default): tool results older than the last two user turns are shortened to a
 *   note, with no model call (the full results stay in the store and the events);
 * - hard (80%): the model is asked for a summary of everything before the current run's message,
 *   which is stored as a `summary` message standing for those messages from then on, so every
 *   later turn sends the summary and the recent turns instead of the whole history. A history
 *   larger than the summarizer's window is summarized in pieces that fit it, in order, each
 *   request carrying the summary of the pieces before it.
 * A provider's context-overflow error triggers the hard step at once (the engine retries the turn
 * once). Token counts are estimates (about four characters a token): the provider's own count
 * arrives only with its answer.
 */
import type { ChatMessage, ModelRequest } from "../models/Model.js"

/** Context windows of common models, in tokens, by the name events show. */
const knownWindows: ReadonlyArray<readonly [RegExp, number]> = [
  [/^openai:gpt-4\.1/, 1_047_576],
  [/^openai:gpt-4o/, 128_000],
  [/^openai:gpt-5/, 400_000],
  [/^openai:o[134]/, 200_000]
]

/** A model's context window in tokens, and what set it: the agent's `contextWindow`, the config's `context.windows`, or Foundry's default. */
export interface ContextWindow {
  readonly tokens: number
  readonly setBy: "agent" | "config" | "default"
}

/** The window of `model`: the agent's or config's setting, else a known default; `undefined` when unknown. */
export const contextWindowOf = (model: string, configured: Readonly<Record<string, number>>, agent?: number): ContextWindow | undefined => {
  if (agent !== undefined) return { tokens: agent, setBy: "agent" }
  const inConfig = configured[model]
  if (inConfig !== undefined) return { tokens: inConfig, setBy: "config" }
  const known = knownWindows.find(([pattern]) => pattern.test(model))?.[1]
  return known === undefined ? undefined : { tokens: known, setBy: "default" }
}

/** The most characters of one tool result a conversation records, and the note's words for why. */
export interface ResultLimit {
  readonly characters: number
  readonly why: string
}

/**
 * The limit of a tool result: `toolOutputLimit`, or a quarter of the window when that is less, so
 * that a result the window cannot hold is cut as it is recorded instead of failing the turn (a
 * quarter leaves the instructions, the message and a few more results room beside it).
 */
export const resultLimitOf = (toolOutputLimit: number, window: ContextWindow | undefined): ResultLimit => {
  // A quarter of the window's tokens, at about four characters a token, is as many characters as it has tokens.
  const share = window?.tokens
  return share === undefined || share >= toolOutputLimit
    ? { characters: toolOutputLimit, why: `(toolOutputLimit is ${toolOutputLimit})` }
    : {
      characters: share,
      why: `(a tool result may fill at most a quarter of the model's context window, ${share} characters): call the tool again for a smaller part to see the rest`
    }
}

/** The text of `message` that counts towards a request's tokens. */
export const messageText = (message: ChatMessage): string => {
  switch (message._tag) {
    case "assistant":
      return message.content + message.toolCalls.map((call) => `${call.name}${call.arguments}`).join("")
    default:
      return message.content
  }
}

/** An estimate of the tokens `characters` of text make: about four characters a token. */
export const tokensOf = (characters: number): number => Math.ceil(characters / 4)

/** The characters of a request that count towards its tokens. */
export const requestCharacters = (request: ModelRequest): number =>
  request.system.length +
  request.messages.reduce((sum, message) => sum + messageText(message).length, 0) +
  request.tools.reduce((sum, tool) => sum + JSON.stringify(tool).length, 0)

/** An estimate of the tokens a request sends. */
export const estimateTokens = (request: ModelRequest): number => tokensOf(requestCharacters(request))

/** A tool result this long or shorter is kept as it is by both elision steps: its note would save nothing. */
const shortenableAfter = 200

/** The soft step: tool results before the last `keepTurns` user messages, shortened to a note. */
export const elideOldToolResults = (messages: ReadonlyArray<ChatMessage>, keepTurns = 2): Array<ChatMessage> => {
  const users = messages.flatMap((message, index) => message._tag === "user" ? [index] : [])
  const keepFrom = users[users.length - keepTurns] ?? 0
  return messages.map((message, index) =>
    index < keepFrom && message._tag === "tool" && message.content.length > shortenableAfter
      ? { ...message, content: `[elided to save context: ${message.content.length} characters; the full result is in the run's events]` }
      : message
  )
}

/**
 * The step for a run that outgrows the window by itself: the tool results before the last
 * assistant message (those it has already acted on), oldest first, shortened to a note saying how
 * to get them again, only as many as bring `request` to `tokens` or under. The results answering the
 * last assistant message stay whole: the model has not seen them yet. Unchanged when none is long
 * enough to shorten.
 */
export const elideEarlierToolResults = (request: ModelRequest, tokens: number): ModelRequest => {
  const lastAssistant = request.messages.findLastIndex((message) => message._tag === "assistant")
  let over = requestCharacters(request) - tokens * 4
  if (over <= 0) return request
  const messages = request.messages.map((message, index) => {
    if (over <= 0 || index >= lastAssistant || message._tag !== "tool" || message.content.length <= shortenableAfter) return message
    const content = `[elided to save context: ${message.content.length} characters; call ${message.name} again if you need this result]`
    over -= message.content.length - content.length
    return { ...message, content }
  })
  return { ...request, messages }
}

const summarySystem = "You compact a conversation between a user and an AI agent so that the agent can continue it. " +
  "Write a concise summary that keeps every fact, decision, open question, promise and piece of data the agent " +
  "will need later (names, ids, numbers, tool results that matter). Write it as notes, not as a dialogue."

/** `text` cut to `limit` characters, saying how many more there were. */
const cutText = (text: string, limit: number): string =>
  text.length > limit ? `${text.slice(0, limit)}... (${text.length - limit} more characters)` : text

/**
 * The lines a summary request shows of `messages`, one a message, each at most about `limit`
 * characters: a tool result at most 2000 (one the size of a document would crowd out the
 * conversation), and a message larger than a summary request can hold cut to its start.
 */
export const summaryLines = (messages: ReadonlyArray<ChatMessage>, limit: number): Array<string> =>
  messages.map((message) => {
    switch (message._tag) {
      case "assistant":
        return cutText(`assistant: ${message.content}${message.toolCalls.map((c) => `\n  called ${c.name}(${c.arguments})`).join("")}`, limit)
      case "tool":
        return `tool ${message.name} returned: ${cutText(message.content, Math.min(2000, limit))}`
      default:
        return cutText(`${message._tag}: ${message.content}`, limit)
    }
  })

/** The request that asks a model for the summary of `lines`, continuing `earlier`: the summary of what came before them. */
export const summaryRequest = (lines: ReadonlyArray<string>, earlier: string | undefined): ModelRequest => ({
  system: summarySystem,
  messages: [{
    _tag: "user",
    content: earlier === undefined
      ? `Summarize this conversation:\n\n${lines.join("\n")}`
      : `Here is the summary of the conversation so far:\n\n${earlier}\n\nWrite the summary of all of it, with what comes next:\n\n${lines.join("\n")}`
  }],
  tools: []
})

/** How many of `lines` from `from` a summary request continuing `earlier` holds within `budget` characters: at least one. */
export const linesWithin = (lines: ReadonlyArray<string>, from: number, earlier: string | undefined, budget: number): number => {
  let characters = requestCharacters(summaryRequest([], earlier))
  let count = 0
  for (const line of lines.slice(from)) {
    characters += line.length + 1
    if (count > 0 && characters > budget) break
    count++
  }
  return count
}

/** The error codes (or types) providers give a request over the context window: OpenAI's, llama.cpp's. */
const overflowCodes: ReadonlySet<string> = new Set(["context_length_exceeded", "exceed_context_size_error"])

/**
 * Whether a provider's error says the request was over the model's context window: by its code
 * when it has one, else by its wording (each server words it its own way).
 */
export const isContextOverflow = (
  error: { readonly status?: number | undefined; readonly message: string; readonly code?: string | undefined }
): boolean =>
  error.status === 400 &&
  ((error.code !== undefined && overflowCodes.has(error.code)) ||
    /context[_ ]length|maximum context length|too many tokens|context window|exceeds the available context size/i.test(error.message))
