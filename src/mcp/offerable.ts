/**
 * An MCP server's tool as models accept it. MCP lets a server describe a tool however it likes,
 * but OpenAI refuses (400) the whole request when one function's schema has an object without
 * `properties` or an array without `items` (the MCP Go SDK gives a tool without parameters
 * `{"type":"object"}`), or a description over 1024 characters: one such tool failed every turn
 * of every run that mounts its server. So schemas are completed, descriptions cut, and a tool
 * whose parameters are not an object at all is not offered.
 */
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Predicate } from "effect"
import type { McpMount } from "./McpMount.js"

/** The longest function description OpenAI takes. */
export const maxDescriptionLength = 1024

/** The keywords whose value is one schema, a list of them, or schemas by name. */
const oneSchema = ["items", "additionalProperties", "not"] as const
const schemaLists = ["anyOf", "oneOf", "allOf", "prefixItems"] as const
const schemasByName = ["properties", "$defs", "definitions", "patternProperties"] as const

const hasType = (schema: Record<string, unknown>, type: string): boolean =>
  schema.type === type || (Array.isArray(schema.type) && schema.type.includes(type))

/** `schema` (JSON Schema; `true`/`false` and anything else stay as they are) with every object given `properties` and every array `items`. */
const completed = (schema: unknown): unknown => {
  if (!Predicate.isRecord(schema)) return schema
  const out: Record<string, unknown> = { ...schema }
  for (const key of oneSchema) if (key in out) out[key] = completed(out[key])
  for (const key of schemaLists) {
    const list = out[key]
    if (Array.isArray(list)) out[key] = list.map(completed)
  }
  for (const key of schemasByName) {
    const named = out[key]
    if (Predicate.isRecord(named)) out[key] = Object.fromEntries(Object.entries(named).map(([name, s]) => [name, completed(s)]))
  }
  // Tuple-form `items` (a list of schemas, draft 2019 and before).
  if (Array.isArray(out.items)) out.items = out.items.map(completed)
  if (hasType(out, "object") && !("properties" in out)) out.properties = {}
  if (hasType(out, "array") && !("items" in out)) out.items = {}
  return out
}

/**
 * A server tool's input schema as a model's parameters: completed, without `$schema`;
 * `undefined` when it is not an object schema (models take only objects as arguments).
 */
export const parametersOf = (tool: Tool): Record<string, unknown> | undefined => {
  // Read as JSON: the SDK's type promises `type: "object"`, but a server sends what it sends.
  const schema: unknown = completed(tool.inputSchema)
  if (!Predicate.isRecord(schema) || schema.type !== "object") return undefined
  const { $schema: _, ...parameters } = schema
  return parameters
}

/** A server tool's description as offered: at most `maxDescriptionLength` characters, cut ones ending in "…". */
export const descriptionOf = (mount: McpMount, tool: Tool): string => {
  const description = tool.description ?? tool.title ?? `${tool.name} from the MCP server ${mount.name}`
  if (description.length <= maxDescriptionLength) return description
  // Not between the two halves of a surrogate pair (an emoji): half of one is no character.
  const end = /[\uD800-\uDBFF]/.test(description.charAt(maxDescriptionLength - 2)) ? maxDescriptionLength - 2 : maxDescriptionLength - 1
  return `${description.slice(0, end)}…`
}

/**
 * Warns of the tools of a listing whose descriptions are cut: once each time the server's tools
 * are listed, not on each turn that offers them. Tools its `tools` allowlist leaves out are not
 * offered, so not warned of.
 */
export const warnOfCutDescriptions = (mount: McpMount, tools: ReadonlyArray<Tool>): Effect.Effect<void> =>
  Effect.forEach(tools, (tool) => {
    const length = (tool.description ?? tool.title ?? "").length
    const allowed = mount.spec.tools === undefined || mount.spec.tools.includes(tool.name)
    return allowed && length > maxDescriptionLength
      ? Effect.logWarning(
        `MCP server ${mount.name}: the description of the tool ${tool.name} is cut to ${maxDescriptionLength} characters ` +
          `for models (it has ${length}, more than OpenAI accepts)`
      )
      : Effect.void
  }, { discard: true })
