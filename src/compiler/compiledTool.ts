/**
 * A tool as a model is offered it: the name it calls it by (its `name`, or the last segment of its
 * route id) and its input as the JSON Schema models expect; and the tool through which an agent
 * delegates to a subagent.
 */
import { Effect, JSONSchema, Schema, SchemaAST } from "effect"
import { subagentToolName } from "../definitions/defineAgent.js"
import { type AnyTool, defineTool } from "../definitions/defineTool.js"
import type { CompiledTool } from "./CompiledApp.js"
import { completed } from "../models/completeSchema.js"
import { maxToolDescriptionLength } from "../models/Model.js"

/** The names a model can call a tool by. */
export const toolNameRule = /^[a-zA-Z0-9_-]{1,64}$/

/** Why a model cannot be offered `tool` (a problem and its fix), whoever offers it; `undefined` when it can. */
export const unofferable = (
  tool: CompiledTool,
  clash?: { readonly problem: string; readonly fix: string }
): { readonly problem: string; readonly fix: string } | undefined =>
  !toolNameRule.test(tool.name)
    ? { problem: `tool name "${tool.name}" is not valid for models (letters, digits, _ and -, at most 64)`, fix: renameFix }
    : clash !== undefined
    ? clash
    : tool.spec.parameters.type !== "object"
    ? { problem: `tool "${tool.id}" has an input that is not an object`, fix: "make its input a Schema.Struct({ ... }) (models pass named arguments)" }
    : tool.spec.description.length > maxToolDescriptionLength
    ? {
      problem: `tool "${tool.id}" has a description of ${tool.spec.description.length} characters, more than models take (OpenAI: ${maxToolDescriptionLength})`,
      fix: "shorten its description; put the rest in the agent's instructions"
    }
    : undefined

/** How to give a tool another name. */
export const renameFix = "give the tool another name: defineTool({ name: \"...\" })"

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

/**
 * The JSON Schema of a tool's input, as models expect it: an object schema at the top (a class's
 * `$ref` inlined, `Struct({})` as an empty object, objects with `properties` and arrays with
 * `items` as OpenAI requires), without `$schema`.
 */
const parametersOf = (tool: AnyTool): Record<string, unknown> => {
  const ast = tool.input.ast
  if (SchemaAST.isTypeLiteral(ast) && ast.propertySignatures.length === 0 && ast.indexSignatures.length === 0) {
    return { type: "object", properties: {}, additionalProperties: false }
  }
  // Completed: `Schema.Object` anywhere in it made OpenAI refuse every turn of the agent.
  const root = completed(JSONSchema.make(tool.input))
  if (!isRecord(root)) return {}
  const { $schema: _, ...schema } = root
  const { $ref, $defs } = schema
  const name = typeof $ref === "string" && $ref.startsWith("#/$defs/") ? $ref.slice("#/$defs/".length) : undefined
  if (name === undefined || !isRecord($defs) || !isRecord($defs[name])) return schema
  const { [name]: target, ...others } = $defs
  return { ...(isRecord(target) ? target : {}), ...(Object.keys(others).length === 0 ? {} : { $defs: others }) }
}

/** `tool` (route `id`, declared in `file`) compiled: its name and its spec for models. */
export const compileTool = (tool: AnyTool, id: string, file: string | undefined): CompiledTool => {
  const name = tool.name ?? id.split("/").pop() ?? id
  return {
    id,
    name,
    file,
    definition: tool,
    spec: { name, description: tool.description, parameters: parametersOf(tool) }
  }
}

/** The tool through which an agent delegates to a subagent: `ask-<name>` with a `message`. */
export const subagentTool = (id: string, description: string): CompiledTool => {
  const name = subagentToolName(id)
  const definition = defineTool({
    description: `Delegate to the ${id} agent (${description}); it answers with its final output`,
    input: Schema.Struct({ message: Schema.String }),
    output: Schema.String,
    run: () => Effect.dieMessage("subagent tools are run by the engine as child runs")
  })
  return {
    id: `${id}#subagent`,
    name,
    file: undefined,
    definition,
    subagent: id,
    spec: {
      name,
      description: definition.description,
      parameters: {
        type: "object",
        properties: { message: { type: "string", description: `what to ask the ${id} agent` } },
        required: ["message"],
        additionalProperties: false
      }
    }
  }
}

