/**
 * A run's message (with the instructions and tools every request of the run carries), or a model
 * request even after compaction, over its model's whole context window:
 * sent, the provider would refuse it (OpenAI: `context_length_exceeded`) however often it was
 * asked, so the run fails before it is sent, saying what is too large, against which window, and
 * what to change.
 */
import { Data } from "effect"
import type { CompiledAgent } from "../compiler/CompiledApp.js"
import type { ModelRequest } from "../models/Model.js"
import { type ContextWindow, estimateTokens, messageText, tokensOf } from "./compaction.js"

export class ContextTooLong extends Data.TaggedError("ContextTooLong")<{ readonly message: string }> {}

/** A part of a request: what it is, its tokens, and what would make it smaller. */
interface Part {
  readonly what: string
  readonly tokens: number
  readonly remedy: string
}

const userMessage = (content: string): Part => ({ what: "the user's message", tokens: tokensOf(content.length), remedy: "Send a shorter message" })

/** What every request of a run carries besides its transcript. */
type Carried = Pick<ModelRequest, "system" | "tools">

const instructionsPart = (carried: Carried): Part =>
  ({ what: "the agent's instructions", tokens: tokensOf(carried.system.length), remedy: "Shorten the agent's instructions" })

const toolsPart = (carried: Carried): Part =>
  ({ what: "the tools' descriptions", tokens: tokensOf(JSON.stringify(carried.tools).length), remedy: "Give the agent fewer tools" })

const partsOf = (request: ModelRequest): ReadonlyArray<Part> => [
  instructionsPart(request),
  toolsPart(request),
  ...request.messages.map((message): Part => {
    const tokens = tokensOf(messageText(message).length)
    switch (message._tag) {
      case "user":
        return userMessage(message.content)
      case "tool":
        return { what: `the result of ${message.name}`, tokens, remedy: `Make ${message.name} return less` }
      case "assistant":
        return { what: "an answer of the model", tokens, remedy: "Start a new conversation" }
      case "summary":
        return { what: "the conversation's summary", tokens, remedy: "Start a new conversation" }
    }
  })
]

const setByText = (window: ContextWindow, agent: CompiledAgent): string => {
  switch (window.setBy) {
    case "agent":
      return `from contextWindow in ${agent.file}`
    case "config":
      return "from context.windows in foundry.config.ts"
    case "default":
      return "Foundry's default for it"
  }
}

/** The failure that `size` explains, with what would make `largest` smaller and the other way out: a model with a larger window. */
const failure = (size: string, largest: Part, agent: CompiledAgent) =>
  new ContextTooLong({ message: `${size}. ${largest.remedy}, or give agent "${agent.id}" a model with a larger window (its model in ${agent.file})` })

/** Where it is over: `model`'s window, its size and what set it. */
const overText = (window: ContextWindow, model: string, agent: CompiledAgent): string =>
  `over the context window of ${model} (${window.tokens} tokens, ${setByText(window, agent)})`

const partOver = (part: Part, window: ContextWindow, model: string, agent: CompiledAgent) =>
  failure(`${part.what} is about ${part.tokens} tokens (at about four characters a token), ${overText(window, model, agent)}: no compaction can make it fit`, part, agent)

/**
 * The refusal of a run's message `content` when, with the instructions and tools every request of
 * its run carries (`carried`), it is over `window` of `model` (the first of `agent`'s models);
 * `undefined` when it is not.
 */
export const messageTooLong = (content: string, carried: Carried, window: ContextWindow, model: string, agent: CompiledAgent): ContextTooLong | undefined => {
  const total = estimateTokens({ ...carried, messages: [{ _tag: "user", content }] })
  if (total <= window.tokens) return undefined
  const message = userMessage(content)
  if (message.tokens > window.tokens) return partOver(message, window, model, agent)
  const [instructions, tools] = [instructionsPart(carried), toolsPart(carried)]
  const room = window.tokens - estimateTokens({ ...carried, messages: [] })
  const size = `the user's message is about ${message.tokens} tokens, about ${total} with ${instructions.what} (about ${instructions.tokens}) and ` +
    `${tools.what} (about ${tools.tokens}) that every request of its run carries (at about four characters a token), ` +
    `${overText(window, model, agent)}: no compaction can make it fit`
  // With room for some message, a shorter one is the way out; with none, shorter instructions or fewer tools (the larger).
  const remedy = room > 0 ? { ...message, remedy: `Send a message of at most about ${room} tokens` } : tools.tokens > instructions.tokens ? tools : instructions
  return failure(size, remedy, agent)
}

/** The failure of `request`, over `window` of `model` even compacted: its largest part named, alone over the window or not. */
export const contextTooLong = (request: ModelRequest, window: ContextWindow, model: string, agent: CompiledAgent): ContextTooLong => {
  const largest = partsOf(request).reduce((a, b) => b.tokens > a.tokens ? b : a)
  return largest.tokens > window.tokens ? partOver(largest, window, model, agent) : failure(
    `the model request is about ${estimateTokens(request)} tokens (at about four characters a token) even after compaction, ` +
      `${overText(window, model, agent)}; its largest part is ${largest.what} (about ${largest.tokens} tokens)`,
    largest,
    agent
  )
}
