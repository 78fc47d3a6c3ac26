/**
 * The OpenAPI document's account of `/mcp`: briefly, since its messages are JSON-RPC defined by
 * the Model Context Protocol, not by this document. It names the endpoint's three methods, what
 * each is for and how a failure reads, so a reader of the document knows the endpoint exists.
 */

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const jsonRpcError = {
  description: "A JSON-RPC error: `{ jsonrpc: \"2.0\", error: { code, message }, id: null }`",
  content: {
    "application/json": {
      schema: {
        type: "object",
        required: ["jsonrpc", "error"],
        properties: {
          jsonrpc: { const: "2.0" },
          error: { type: "object", required: ["code", "message"], properties: { code: { type: "integer" }, message: { type: "string" } } },
          id: { type: ["string", "integer", "null"] }
        }
      }
    }
  }
}

const sessionHeader = {
  name: "Mcp-Session-Id",
  in: "header",
  description: "The session the answer to `initialize` named",
  schema: { type: "string" }
}

const mcpPath = {
  post: {
    tags: ["mcp"],
    operationId: "mcp.post",
    summary: "Send MCP messages (Model Context Protocol, Streamable HTTP)",
    description: "Foundry's agents as MCP tools (`message`, optional `conversation` and `instance`); conversations as resources " +
      "at `foundry://conversations/<id>`. An `initialize` request opens a session (its id in the `Mcp-Session-Id` answer header); " +
      "a request without the header that is not `initialize` is served statelessly. Requests need `Accept: application/json, " +
      "text/event-stream`; answers to requests come as a server-sent event stream carrying progress notifications, then the result.",
    parameters: [{ ...sessionHeader, required: false }],
    requestBody: {
      required: true,
      content: { "application/json": { schema: { description: "A JSON-RPC 2.0 message or batch, as MCP defines them" } } }
    },
    responses: {
      "200": { description: "The answers, as a server-sent event stream", content: { "text/event-stream": { schema: { type: "string" } } } },
      "202": { description: "Notifications or responses accepted" },
      "400": jsonRpcError,
      "404": { ...jsonRpcError, description: "No session has that `Mcp-Session-Id` (it ended): initialize a new one" },
      "413": { ...jsonRpcError, description: "The body is larger than the server reads" }
    }
  },
  get: {
    tags: ["mcp"],
    operationId: "mcp.stream",
    summary: "A session's stream of server notifications (e.g. `notifications/tools/list_changed`)",
    parameters: [{ ...sessionHeader, required: true }],
    responses: {
      "200": { description: "Server-sent events", content: { "text/event-stream": { schema: { type: "string" } } } },
      "400": jsonRpcError,
      "404": jsonRpcError
    }
  },
  delete: {
    tags: ["mcp"],
    operationId: "mcp.end",
    summary: "End a session",
    parameters: [{ ...sessionHeader, required: true }],
    responses: { "200": { description: "The session ended" }, "400": jsonRpcError, "404": jsonRpcError }
  }
}

/** An `OpenApi.Transform` that adds `/mcp` to the document. */
export const declareMcp = (spec: Record<string, unknown>): Record<string, unknown> => ({
  ...spec,
  paths: { ...(isRecord(spec.paths) ? spec.paths : {}), "/mcp": mcpPath }
})
