/**
 * An MCP server's tool as models accept it. MCP lets a server describe a tool however it likes,
 * but OpenAI refuses (400) the whole request when one function's schema has an object without
 * `properties` or an array without `items` (the MCP Go SDK gives a tool without parameters
 * `{"type":"object"}`), or a description over 1024 characters: one such tool failed every turn
 * of every run that mounts its server. So schemas are completed, descriptions cut, and a tool
 * whose parameters are not an object at all is not offered. This is worked out once a listing
 * (toolListing.ts), and what models see kept with the listed tool.
 */
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import { Either, Predicate } from "effect"
import { completed } from "../models/completeSchema.js"
import { maxToolDescriptionLength } from "../models/Model.js"
import { type McpMount, toolSeparator } from "./McpMount.js"
import type { OutputCheck, OutputChecks } from "./outputCheck.js"

/**
 * A server tool's input schema as a model's parameters: completed, without `$schema`;
 * `undefined` when it is not an object schema (models take only objects as arguments).
 */
const parametersOf = (tool: Tool): Record<string, unknown> | undefined => {
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
const descriptionOf = (mount: McpMount, tool: Tool): string => {
  const description = givenDescription(mount, tool)
  if (description.length <= maxToolDescriptionLength) return description
  // Not between the two halves of a surrogate pair (an emoji): half of one is no character.
  const end = /[\uD800-\uDBFF]/.test(description.charAt(maxToolDescriptionLength - 2)) ? maxToolDescriptionLength - 2 : maxToolDescriptionLength - 1
  return `${description.slice(0, end)}…`
}

/**
 * The name the model calls a server's tool by: `<server>__<tool>`, with characters models do not
 * accept in a name (MCP allows `.` and `/`) as `_`; `undefined` when it would be over 64.
 */
export const mcpToolName = (server: string, tool: string): string | undefined => {
  const name = `${server}${toolSeparator}${tool.replace(/[^A-Za-z0-9_-]/g, "_")}`
  return name.length <= 64 ? name : undefined
}

/** A server's tool as a listing gives it, ready to offer: what models see of it is worked out once a listing, not each turn. */
export interface ListedTool {
  /** As the server listed it (a tools module's declarations are written from it). */
  readonly tool: Tool
  /**
   * The name models call it by; `undefined` when it has none (too long, or another of the
   * server's tools took it first), warned of as it was listed.
   */
  readonly modelName: string | undefined
  /** As models are offered it: cut. */
  readonly description: string
  /** Its input schema as models are offered it: completed. */
  readonly parameters: Record<string, unknown>
  /** Checks a result against its output schema; `undefined` when it declares none. */
  readonly checkOutput: OutputCheck | undefined
}

/** A listed tool as offered, with what to warn of it (a cut description); or why it is left out. */
export type Offerable =
  | { readonly _tag: "Offered"; readonly listed: ListedTool; readonly warning: string | undefined }
  | { readonly _tag: "LeftOut"; readonly warning: string }

/**
 * `tool` as models are offered it. Left out: one whose parameters are not an object, one whose
 * output schema does not compile, and one that must run as a task (`execution.taskSupport:
 * "required"`): a plain `tools/call` of it fails, and Foundry makes no task-augmented calls.
 */
export const offerable = (mount: McpMount, tool: Tool, checks: OutputChecks): Offerable => {
  const leftOut = (why: string): Offerable => ({ _tag: "LeftOut", warning: `MCP server ${mount.name}: the tool ${tool.name} is left out, ${why}` })
  const parameters = parametersOf(tool)
  if (parameters === undefined) return leftOut("its input schema is not an object schema (models take only objects as arguments)")
  if (tool.execution?.taskSupport === "required") {
    return leftOut(
      "it runs only as a task (its listing says execution.taskSupport \"required\"), and Foundry calls tools with a plain tools/call, which such a tool refuses"
    )
  }
  const check = checks(tool)
  if (Either.isLeft(check)) return leftOut(check.left)
  const length = givenDescription(mount, tool).length
  return {
    _tag: "Offered",
    listed: { tool, modelName: mcpToolName(mount.name, tool.name), description: descriptionOf(mount, tool), parameters, checkOutput: check.right },
    warning: length > maxToolDescriptionLength
      ? `MCP server ${mount.name}: the description of the tool ${tool.name} is cut to ${maxToolDescriptionLength} characters ` +
        `for models (it has ${length}, more than OpenAI accepts)`
      : undefined
  }
}
