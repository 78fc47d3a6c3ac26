/**
 * A JSON-RPC error response: the shape an MCP client reads any failure in. A module of its own so
 * that the endpoint can answer one before the MCP SDK is loaded.
 */
import { HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"

/** A JSON-RPC error response with HTTP status `status`, to the request `id` when it is known. */
export const jsonRpcError = (status: number, code: number, message: string, id: string | number | null = null) =>
  Effect.succeed(HttpServerResponse.unsafeJson({ jsonrpc: "2.0", error: { code, message }, id }, { status }))
