/** The strict fake's checks of a request's tools: names, schemas, and the tools its history calls. */
import { Either } from "effect"
import { invalidType, invalidValue, isRecord, missing, reject } from "./rejections.js"
import type { ChatMessage, ChatTool } from "./wire.js"

/** Function names OpenAI accepts: letters, digits, `_` and `-`, at most 64 of them. */
const toolNamePattern = /^[a-zA-Z0-9_-]+$/

export const parseTool = (raw: unknown, index: number) =>
  Either.gen(function*() {
    const at = `tools[${index}]`
    if (!isRecord(raw)) return yield* invalidType(at, "an object", raw)
    if (raw.type === undefined) return yield* missing(`${at}.type`)
    if (raw.type !== "function") return yield* invalidValue(`${at}.type`, String(raw.type), ["function"])
    if (raw.function === undefined) return yield* missing(`${at}.function`)
    const fn = raw.function
    if (!isRecord(fn)) return yield* invalidType(`${at}.function`, "an object", fn)
    if (fn.name === undefined) return yield* missing(`${at}.function.name`)
    if (typeof fn.name !== "string") return yield* invalidType(`${at}.function.name`, "a string", fn.name)
    const name = fn.name
    if (!toolNamePattern.test(name)) {
      return yield* reject(
        `Invalid '${at}.function.name': string does not match pattern. Expected a string that matches the pattern '${toolNamePattern.source}'.`,
        `${at}.function.name`,
        "invalid_value"
      )
    }
    if (name.length > 64) {
      return yield* reject(
        `Invalid '${at}.function.name': string too long. Expected a string with maximum length 64, but got a string with length ${name.length} instead.`,
        `${at}.function.name`,
        "string_above_max_length"
      )
    }
    if (fn.description !== undefined && typeof fn.description !== "string") {
      return yield* invalidType(`${at}.function.description`, "a string", fn.description)
    }
    const parameters = fn.parameters
    if (parameters !== undefined) {
      if (!isRecord(parameters)) return yield* invalidType(`${at}.function.parameters`, "an object", parameters)
      if (parameters.type !== "object") {
        // OpenAI prints a missing type as Python's `None`.
        const got = typeof parameters.type === "string" ? parameters.type : "None"
        return yield* reject(
          `Invalid schema for function '${name}': schema must be a JSON Schema of 'type: "object"', got 'type: "${got}"'.`,
          `${at}.function.parameters`,
          "invalid_function_parameters"
        )
      }
    }
    const incomplete = parameters === undefined ? undefined : incompleteSchema(parameters, [])
    if (incomplete !== undefined) {
      return yield* reject(
        `Invalid schema for function '${name}': In context=(${incomplete.context.map((part) => `'${part}'`).join(", ")}${incomplete.context.length === 1 ? "," : ""}), ${incomplete.problem}.`,
        `${at}.function.parameters`,
        "invalid_function_parameters"
      )
    }
    const tool: ChatTool = { name, description: fn.description, parameters }
    return tool
  })

/**
 * OpenAI's refusal of a schema part it cannot use, at any depth: an object without `properties`
 * (the shape MCP servers give tools without parameters), an array without `items`. `context` is
 * the path OpenAI prints.
 */
export const incompleteSchema = (schema: unknown, context: ReadonlyArray<string>): { readonly context: ReadonlyArray<string>; readonly problem: string } | undefined => {
  if (!isRecord(schema)) return undefined
  const types = Array.isArray(schema.type) ? schema.type : [schema.type]
  if (types.includes("object") && schema.properties === undefined) return { context, problem: "object schema missing properties" }
  if (types.includes("array") && schema.items === undefined) return { context, problem: "array schema missing items" }
  const inner: Array<readonly [ReadonlyArray<string>, unknown]> = []
  for (const key of ["properties", "$defs", "definitions"]) {
    const members = schema[key]
    if (isRecord(members)) for (const [name, member] of Object.entries(members)) inner.push([[...context, key, name], member])
  }
  if (schema.items !== undefined) inner.push([[...context, "items"], schema.items])
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    const members = schema[key]
    if (Array.isArray(members)) members.forEach((member, index) => inner.push([[...context, key, String(index)], member]))
  }
  for (const [at, member] of inner) {
    const found = incompleteSchema(member, at)
    if (found !== undefined) return found
  }
  return undefined
}

/**
 * Stricter than OpenAI, on purpose: a transcript calling a tool the request does not offer
 * means the engine mixed up turns or agents, so it is rejected when `tools` are given.
 */
export const checkToolNames = (messages: ReadonlyArray<ChatMessage>, tools: ReadonlyArray<ChatTool>) =>
  Either.gen(function*() {
    if (tools.length === 0) return
    const offered = new Set(tools.map((tool) => tool.name))
    for (const [index, message] of messages.entries()) {
      if (message.role !== "assistant") continue
      for (const [k, call] of message.toolCalls.entries()) {
        if (!offered.has(call.name)) {
          const param = `messages[${index}].tool_calls[${k}].function.name`
          return yield* reject(
            `Invalid parameter: '${param}' is '${call.name}', which is not the name of a function in 'tools'.`,
            param
          )
        }
      }
    }
  })
