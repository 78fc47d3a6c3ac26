/**
 * The MCP SDK's client side, as the connections use it: imported by the first connection, not by
 * every start of a project that may have no MCP server (docs/decisions.md "Startup loads what it
 * serves").
 */
import { Effect } from "effect"

const importSdk = async () => {
  const [client, stdio, streamableHttp, types, ajv] = await Promise.all([
    import("@modelcontextprotocol/sdk/client/index.js"),
    import("@modelcontextprotocol/sdk/client/stdio.js"),
    import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
    import("@modelcontextprotocol/sdk/types.js"),
    import("@modelcontextprotocol/sdk/validation/ajv")
  ])
  return {
    Client: client.Client,
    StdioClientTransport: stdio.StdioClientTransport,
    StreamableHTTPClientTransport: streamableHttp.StreamableHTTPClientTransport,
    StreamableHTTPError: streamableHttp.StreamableHTTPError,
    AjvJsonSchemaValidator: ajv.AjvJsonSchemaValidator,
    ErrorCode: types.ErrorCode,
    ListToolsResultSchema: types.ListToolsResultSchema,
    McpError: types.McpError,
    ResultSchema: types.ResultSchema,
    ToolSchema: types.ToolSchema,
    ToolListChangedNotificationSchema: types.ToolListChangedNotificationSchema
  }
}

/** What the connections take from the SDK. */
export type McpClientSdk = Awaited<ReturnType<typeof importSdk>>

let imported: Promise<McpClientSdk> | undefined

/** The SDK's client side, imported by the first call. */
export const loadMcpClientSdk: Effect.Effect<McpClientSdk> = Effect.promise(() => (imported ??= importSdk()))

/**
 * How much later than a call's own timeout the SDK's timer for it fires: ours, which says which
 * call timed out, always comes first, and the SDK's is only a backstop. A server may answer with
 * the SDK's timeout code itself, so an error with that code does not say the call timed out.
 */
export const sdkTimeoutMargin = 1_000
