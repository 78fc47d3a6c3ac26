/** The strict fake's checks of a request's messages: each one's shape, and tool calls paired with their results. */
import { Either } from "effect"
import { emptyArray, invalidType, invalidValue, isRecord, missing, reject } from "./rejections.js"
import type { ChatMessage, ChatToolCall } from "./wire.js"

type Role = "system" | "developer" | "user" | "assistant" | "tool"
/** In the order OpenAI lists them. */
const roles: ReadonlyArray<Role> = ["system", "assistant", "user", "tool", "developer"]
const isRole = (value: string): value is Role => roles.some((role) => role === value)

/** Which content part types each role accepts (the Chat Completions content-part unions). */
const partTypes: Readonly<Record<Role, ReadonlyArray<string>>> = {
  system: ["text"],
  developer: ["text"],
  user: ["text", "image_url", "input_audio", "file"],
  assistant: ["text", "refusal"],
  tool: ["text"]
}

/** A message's `content`: a string, or a non-empty array of parts; reduced to its text. */
const parseContent = (content: unknown, at: string, allowed: ReadonlyArray<string>) =>
  Either.gen(function*() {
    if (typeof content === "string") return content
    if (!Array.isArray(content)) return yield* invalidType(`${at}.content`, "one of a string or array of objects", content)
    if (content.length === 0) return yield* emptyArray(`${at}.content`)
    let text = ""
    for (const [j, part] of content.entries()) {
      const partAt = `${at}.content[${j}]`
      if (!isRecord(part)) return yield* invalidType(partAt, "an object", part)
      if (part.type === undefined) return yield* missing(`${partAt}.type`)
      if (typeof part.type !== "string") return yield* invalidType(`${partAt}.type`, "a string", part.type)
      if (!allowed.includes(part.type)) return yield* invalidValue(`${partAt}.type`, part.type, allowed)
      if (part.type === "text") {
        if (part.text === undefined) return yield* missing(`${partAt}.text`)
        if (typeof part.text !== "string") return yield* invalidType(`${partAt}.text`, "a string", part.text)
        text += part.text
      }
    }
    return text
  })

const parseToolCalls = (raw: unknown, at: string) =>
  Either.gen(function*() {
    if (!Array.isArray(raw)) return yield* invalidType(`${at}.tool_calls`, "an array of objects", raw)
    if (raw.length === 0) return yield* emptyArray(`${at}.tool_calls`)
    const calls: Array<ChatToolCall> = []
    for (const [k, call] of raw.entries()) {
      const callAt = `${at}.tool_calls[${k}]`
      if (!isRecord(call)) return yield* invalidType(callAt, "an object", call)
      if (call.id === undefined) return yield* missing(`${callAt}.id`)
      if (typeof call.id !== "string") return yield* invalidType(`${callAt}.id`, "a string", call.id)
      if (call.type === undefined) return yield* missing(`${callAt}.type`)
      if (call.type !== "function") return yield* invalidValue(`${callAt}.type`, String(call.type), ["function"])
      if (call.function === undefined) return yield* missing(`${callAt}.function`)
      const fn = call.function
      if (!isRecord(fn)) return yield* invalidType(`${callAt}.function`, "an object", fn)
      if (fn.name === undefined) return yield* missing(`${callAt}.function.name`)
      if (typeof fn.name !== "string") return yield* invalidType(`${callAt}.function.name`, "a string", fn.name)
      if (fn.arguments === undefined) return yield* missing(`${callAt}.function.arguments`)
      if (typeof fn.arguments !== "string") {
        // A common bug: sending the parsed arguments object instead of the JSON text.
        return yield* invalidType(`${callAt}.function.arguments`, "a string", fn.arguments)
      }
      if (calls.some((previous) => previous.id === call.id)) {
        // Our wording: results are matched by id, so two calls sharing one can never be answered.
        return yield* reject(`Invalid '${at}.tool_calls': duplicate tool call id '${call.id}'.`, `${callAt}.id`)
      }
      calls.push({ id: call.id, name: fn.name, arguments: fn.arguments })
    }
    return calls
  })

/** One message's shape: role, content and the fields its role requires. */
export const parseMessage = (raw: unknown, index: number) =>
  Either.gen(function*() {
    const at = `messages[${index}]`
    if (!isRecord(raw)) return yield* invalidType(at, "an object", raw)
    if (raw.role === undefined) return yield* missing(`${at}.role`)
    if (typeof raw.role !== "string") return yield* invalidType(`${at}.role`, "a string", raw.role)
    const role = raw.role
    if (!isRole(role)) return yield* invalidValue(`${at}.role`, role, roles)
    switch (role) {
      case "system":
      case "developer":
      case "user": {
        if (raw.content === undefined) return yield* missing(`${at}.content`)
        const content = yield* parseContent(raw.content, at, partTypes[role])
        const message: ChatMessage = { role, content }
        return message
      }
      case "assistant": {
        const toolCalls = raw.tool_calls === undefined ? [] : yield* parseToolCalls(raw.tool_calls, at)
        if (raw.content === undefined || raw.content === null) {
          // `content` may only be left out (or null) next to tool calls.
          if (toolCalls.length === 0) {
            return yield* reject("Invalid value for 'content': expected a string, got null.", `${at}.content`)
          }
          const message: ChatMessage = { role, content: null, toolCalls }
          return message
        }
        const content = yield* parseContent(raw.content, at, partTypes.assistant)
        const message: ChatMessage = { role, content, toolCalls }
        return message
      }
      case "tool": {
        if (raw.tool_call_id === undefined) return yield* missing(`${at}.tool_call_id`)
        if (typeof raw.tool_call_id !== "string") {
          return yield* invalidType(`${at}.tool_call_id`, "a string", raw.tool_call_id)
        }
        if (raw.content === undefined) return yield* missing(`${at}.content`)
        const content = yield* parseContent(raw.content, at, partTypes.tool)
        const message: ChatMessage = { role, toolCallId: raw.tool_call_id, content }
        return message
      }
    }
  })

/**
 * The pairing rules: every assistant message with `tool_calls` is followed directly by exactly
 * one `tool` message per call (in any order among themselves, before any other message), and
 * every `tool` message answers a call of the assistant message directly above its group.
 */
export const checkToolPairing = (messages: ReadonlyArray<ChatMessage>) =>
  Either.gen(function*() {
    // The assistant message whose calls the following tool messages answer, if any.
    let answering: { readonly index: number; readonly ids: ReadonlySet<string>; readonly answered: Set<string> } | undefined
    const unanswered = () => answering === undefined ? [] : [...answering.ids].filter((id) => !answering?.answered.has(id))
    const missingResults = (ids: ReadonlyArray<string>, index: number) =>
      reject(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
          `The following tool_call_ids did not have response messages: ${ids.join(", ")}`,
        `messages.[${index}].role`
      )
    for (const [index, message] of messages.entries()) {
      if (message.role === "tool") {
        if (answering === undefined) {
          // OpenAI's message, typo included.
          return yield* reject(
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
            `messages.[${index}].role`
          )
        }
        if (!answering.ids.has(message.toolCallId)) {
          return yield* reject(
            `Invalid parameter: 'tool_call_id' of '${message.toolCallId}' not found in 'tool_calls' of previous message.`,
            `messages.[${index}].tool_call_id`
          )
        }
        if (answering.answered.has(message.toolCallId)) {
          // Our wording: each call takes exactly one result.
          return yield* reject(
            `Invalid parameter: 'tool_call_id' of '${message.toolCallId}' already has a response message; ` +
              "each 'tool_call_id' must be responded to exactly once.",
            `messages.[${index}].tool_call_id`
          )
        }
        answering.answered.add(message.toolCallId)
        continue
      }
      const open = unanswered()
      if (answering !== undefined && open.length > 0) return yield* missingResults(open, answering.index)
      answering = message.role === "assistant" && message.toolCalls.length > 0
        ? { index, ids: new Set(message.toolCalls.map((call) => call.id)), answered: new Set() }
        : undefined
    }
    const open = unanswered()
    if (answering !== undefined && open.length > 0) return yield* missingResults(open, answering.index)
  })
