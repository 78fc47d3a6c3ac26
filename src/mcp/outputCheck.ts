/**
 * A server tool's `structuredContent` checked against the `outputSchema` it listed, as the MCP
 * SDK's client checks it, with its validator and its errors. The SDK keeps the validators of the
 * last `tools/list` page it read only, and none for a page Foundry reads tool by tool (listTools.ts):
 * a tool on any other page went unchecked. Foundry lists without the SDK's cache and keeps each
 * tool's check with the tool it listed, so every tool that declares an output schema is checked.
 */
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import { Either } from "effect"
import type { McpClientSdk } from "./mcpClientSdk.js"
import { messageOf } from "./sdkErrors.js"

/** Throws the SDK's own error (`McpError`) when a result does not keep to the tool's output schema. */
export type OutputCheck = (result: Readonly<Record<string, unknown>>) => void

/** Compiles output schemas for one listing: a new one each listing, so that what relistings compile is let go with them. */
export type OutputChecks = (tool: Tool) => Either.Either<OutputCheck | undefined, string>

/** The checks of one listing's tools: `undefined` for a tool without an output schema, why not for one whose schema does not compile. */
export const outputChecks = (sdk: McpClientSdk): OutputChecks => {
  let validators: InstanceType<McpClientSdk["AjvJsonSchemaValidator"]> | undefined
  return (tool) => {
    const schema = tool.outputSchema
    if (schema === undefined) return Either.right(undefined)
    try {
      const validate = (validators ??= new sdk.AjvJsonSchemaValidator()).getValidator(schema)
      return Either.right((result) => {
        // As the SDK's `Client.callTool`: an error result need not keep to it.
        if (!result.structuredContent && !result.isError) {
          throw new sdk.McpError(sdk.ErrorCode.InvalidRequest, `Tool ${tool.name} has an output schema but did not return structured content`)
        }
        if (!result.structuredContent) return
        const checked = validate(result.structuredContent)
        if (!checked.valid) {
          throw new sdk.McpError(sdk.ErrorCode.InvalidParams, `Structured content does not match the tool's output schema: ${checked.errorMessage}`)
        }
      })
    } catch (error) {
      return Either.left(`its output schema cannot be used to check its results: ${messageOf(error)}`)
    }
  }
}
