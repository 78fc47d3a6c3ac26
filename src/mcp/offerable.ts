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
import { completed } from "../models/completeSchema.js"
import { maxToolDescriptionLength } from "../models/Model.js"
import type { McpMount } from "./McpMount.js"

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

/** A server tool's description as the server gives it: its description, else its title, else where it comes from. */
const givenDescription = (mount: McpMount, tool: Tool): string =>
  tool.description ?? tool.title ?? `${tool.name} from the MCP server ${mount.name}`

/** A server tool's description as offered: at most `maxToolDescriptionLength` characters, cut ones ending in "…". */
export const descriptionOf = (mount: McpMount, tool: Tool): string => {
  const description = givenDescription(mount, tool)
  if (description.length <= maxToolDescriptionLength) return description
  // Not between the two halves of a surrogate pair (an emoji): half of one is no character.
  const end = /[\uD800-\uDBFF]/.test(description.charAt(maxToolDescriptionLength - 2)) ? maxToolDescriptionLength - 2 : maxToolDescriptionLength - 1
  return `${description.slice(0, end)}…`
}

/**
 * Warns of the tools of a listing whose descriptions are cut: once each time the server's tools
 * are listed, not on each turn that offers them. Tools its `tools` allowlist leaves out are not
 * offered, so not warned of.
 */
export const warnOfCutDescriptions = (mount: McpMount, tools: ReadonlyArray<Tool>): Effect.Effect<void> =>
  Effect.forEach(tools, (tool) => {
    const length = givenDescription(mount, tool).length
    const allowed = mount.spec.tools === undefined || mount.spec.tools.includes(tool.name)
    return allowed && length > maxToolDescriptionLength
      ? Effect.logWarning(
        `MCP server ${mount.name}: the description of the tool ${tool.name} is cut to ${maxToolDescriptionLength} characters ` +
          `for models (it has ${length}, more than OpenAI accepts)`
      )
      : Effect.void
  }, { discard: true })
