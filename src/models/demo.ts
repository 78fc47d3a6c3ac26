/**
 * The demo model: offline and deterministic, so a project is useful with no API key. It picks the
 * tool whose name or description best matches the user's message, fills the tool's input from its
 * JSON Schema and the message, calls it, then answers with what the tool returned.
 */
import { Effect, Stream } from "effect"
import type { ChatMessage, LanguageModel, ModelChunk, ModelRequest, ToolSpec } from "./Model.js"
import { splitText } from "./scripted.js"

const words = (text: string): ReadonlyArray<string> =>
  text.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length > 2).map((w) => w.replace(/(ies|es|s)$/, ""))

const stopWords = new Set(["the", "and", "for", "you", "with", "that", "this", "what", "from", "can", "are", "its", "tell"])

/** How well a tool matches a message: shared words, with the tool's name counting double. */
const score = (tool: ToolSpec, message: ReadonlySet<string>): number => {
  const nameWords = words(tool.name.replace(/[_-]/g, " "))
  const descriptionWords = words(tool.description).filter((w) => !stopWords.has(w))
  return nameWords.filter((w) => message.has(w)).length * 2 + new Set(descriptionWords.filter((w) => message.has(w))).size
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

/** A value for one property of a tool's input, taken from the message where it can be. */
const fill = (name: string, schema: unknown, message: string): unknown => {
  const property = isRecord(schema) ? schema : {}
  if (Array.isArray(property.enum)) {
    const options = property.enum
    return options.find((option) => message.toLowerCase().includes(String(option).toLowerCase())) ?? options[0]
  }
  if (Array.isArray(property.anyOf)) {
    const literals = property.anyOf.flatMap((member) => isRecord(member) && "const" in member ? [member.const] : [])
    if (literals.length > 0) {
      return literals.find((option) => message.toLowerCase().includes(String(option).toLowerCase())) ?? literals[0]
    }
  }
  switch (property.type) {
    case "number":
    case "integer": {
      const found = /-?\d+(\.\d+)?/.exec(message)
      return found === null ? 1 : Number(found[0])
    }
    case "boolean":
      return true
    case "array":
      return []
    case "object":
      return {}
    default: {
      const quoted = /["“']([^"”']+)["”']/.exec(message)
      if (/(^|[^a-z])(id|number|code|ref)$/i.test(name) || /Id$/.test(name)) {
        const token = /[A-Za-z0-9-]*\d[A-Za-z0-9-]*/.exec(message)
        if (token !== null) return token[0].replace(/^#/, "")
      }
      if (quoted !== null) return quoted[1]
      return message
    }
  }
}

const argumentsFor = (tool: ToolSpec, message: string): Record<string, unknown> => {
  const properties = isRecord(tool.parameters.properties) ? tool.parameters.properties : {}
  return Object.fromEntries(Object.entries(properties).map(([name, schema]) => [name, fill(name, schema, message)]))
}

const lastUserMessage = (messages: ReadonlyArray<ChatMessage>): string => {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]
    if (message?._tag === "user") return message.content
  }
  return ""
}

/** The tool results given since the model's last call, newest last. */
const pendingToolResults = (messages: ReadonlyArray<ChatMessage>) => {
  const results: Array<{ readonly name: string; readonly content: string }> = []
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]
    if (message?._tag !== "tool") break
    results.unshift({ name: message.name, content: message.content })
  }
  return results
}

const answer = (request: ModelRequest): ReadonlyArray<ModelChunk> => {
  const results = pendingToolResults(request.messages)
  if (results.length > 0) {
    const text = results.map((r) => `${r.name} returned: ${r.content}`).join("\n")
    return [...splitText(text).map((t): ModelChunk => ({ _tag: "TextDelta", text: t }))]
  }
  const message = lastUserMessage(request.messages)
  const messageWords = new Set(words(message))
  const ranked = request.tools
    .map((tool) => ({ tool, score: score(tool, messageWords) }))
    .filter((entry) => entry.score > 0)
    .sort((a, b) => b.score - a.score)
  const best = ranked[0]
  if (best !== undefined) {
    const call = { id: `call_demo_${request.messages.length}`, name: best.tool.name, arguments: JSON.stringify(argumentsFor(best.tool, message)) }
    return [{ _tag: "ToolCall", call }]
  }
  const toolList = request.tools.length === 0
    ? "I have no tools."
    : `My tools: ${request.tools.map((t) => `${t.name} (${t.description})`).join("; ")}. Mention what one of them does to see it called.`
  const text = `Demo model here (offline, deterministic). You said: "${message}". ${toolList}`
  return splitText(text).map((t): ModelChunk => ({ _tag: "TextDelta", text: t }))
}

const estimateTokens = (text: string): number => Math.ceil(text.length / 4)

/** The demo model's whole turn: its answer, then what it used. */
const turnOf = (request: ModelRequest): ReadonlyArray<ModelChunk> => {
  const chunks = answer(request)
  const input = estimateTokens(request.system + JSON.stringify(request.messages))
  const output = estimateTokens(JSON.stringify(chunks))
  return [...chunks, { _tag: "Usage", inputTokens: input, outputTokens: output }]
}

/** The offline demo model. */
export const demoModel: LanguageModel = {
  name: "demo",
  stream: (request) => Stream.fromIterable(turnOf(request)),
  complete: (request) => Effect.succeed(turnOf(request))
}
