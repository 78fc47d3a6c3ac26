/**
 * A JSON-RPC error response: the shape an MCP client reads any failure in. A module of its own so
 * that the endpoint can answer one before the MCP SDK is loaded.
 */
import { HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"

/** A JSON-RPC error message, to the request `id` when it is known. */
export interface JsonRpcErrorMessage {
  readonly jsonrpc: "2.0"
  readonly error: { readonly code: number; readonly message: string }
  readonly id: string | number | null
}

/** The error message `code` with `message`, to the request `id`. */
export const errorMessage = (code: number, message: string, id: string | number | null = null): JsonRpcErrorMessage => ({
  jsonrpc: "2.0",
  error: { code, message },
  id
})

/** A JSON-RPC error response with HTTP status `status`, to the request `id` when it is known. */
export const jsonRpcError = (status: number, code: number, message: string, id: string | number | null = null) =>
  Effect.succeed(HttpServerResponse.unsafeJson(errorMessage(code, message, id), { status }))
