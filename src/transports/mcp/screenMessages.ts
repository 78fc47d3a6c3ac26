/**
 * A JSON-RPC message or batch POSTed to `/mcp`, screened before the SDK's transport sees it. The
 * transport answers JSON that is no JSON-RPC message with a parse error (-32700), which is for
 * text that is not JSON; JSON-RPC 2.0 says Invalid Request (-32600), with what is wrong. It
 * refuses a whole batch with one parse error when any element is not a JSON-RPC message,
 * and answers an empty one 202 with nothing; JSON-RPC 2.0 answers each malformed element on its
 * own (-32600 Invalid Request, to its id when it can be read) and an empty batch with one -32600.
 * MCP removed batches in 2025-06-18, so a batch under that version or a later one is refused whole,
 * saying so. Loaded with the SDK, by the endpoint's first request.
 */
import { JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js"
import { invalidParams } from "./invalidParams.js"
import { errorMessage, type JsonRpcErrorMessage } from "./jsonRpcError.js"

/** The first MCP revision without JSON-RPC batches. */
export const batchesRemovedIn = "2025-06-18"

/** What becomes of a batch. */
export type Screened =
  /** Refused whole, with HTTP status `status`: one error, or one for each element when none was a JSON-RPC message. */
  | { readonly _tag: "Refused"; readonly status: number; readonly error: JsonRpcErrorMessage | ReadonlyArray<JsonRpcErrorMessage> }
  /** The errors `answered` for the elements taken out, and the elements `rest` for the transport. */
  | { readonly _tag: "Screened"; readonly answered: ReadonlyArray<JsonRpcErrorMessage>; readonly rest: ReadonlyArray<unknown> }

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** What a JSON value is, in a word: "a number", "an array". */
const kindOf = (value: unknown): string =>
  value === undefined ? "nothing" : value === null ? "null" : Array.isArray(value) ? "an array" : typeof value === "object" ? "an object" : `a ${typeof value}`

const isId = (value: unknown): value is string | number =>
  typeof value === "string" || (typeof value === "number" && Number.isInteger(value))

/** Why `element` is no JSON-RPC message the transport takes; `undefined` when it is one. */
const malformed = (element: unknown): string | undefined => {
  if (!isRecord(element)) return `expected a JSON-RPC message (an object), got ${kindOf(element)}`
  if (element.jsonrpc !== "2.0") return `"jsonrpc" must be "2.0", got ${element.jsonrpc === undefined ? "nothing" : JSON.stringify(element.jsonrpc)}`
  if ("method" in element && typeof element.method !== "string") return `"method" must be a string, got ${kindOf(element.method)}`
  if ("id" in element && !isId(element.id) && !("error" in element && element.id === null)) {
    return `"id" must be a string or an integer, got ${typeof element.id === "number" ? String(element.id) : kindOf(element.id)}`
  }
  if (!("method" in element) && !("result" in element) && !("error" in element)) {
    return `expected a request or notification ("method") or a response ("result" or "error")`
  }
  // What the checks above let through and the SDK's schema refuses (a stray field, an error without a code).
  return JSONRPCMessageSchema.safeParse(element).success ? undefined : `not a JSON-RPC message as MCP defines one (check its fields against the spec)`
}

/** Why a message POSTed alone is not a JSON-RPC message, as the -32600 answered to its id (or null); `undefined` when it is one. */
export const screenMessage = (message: unknown): JsonRpcErrorMessage | undefined => {
  const wrong = malformed(message)
  return wrong === undefined ? undefined : errorMessage(-32600, `Invalid Request: ${wrong}`, isRecord(message) && isId(message.id) ? message.id : null)
}

/**
 * `batch` screened: refused whole when the protocol version in force (`versions`: the session's
 * and the MCP-Protocol-Version header's, when known) has no batches or when it is empty; else its
 * malformed elements and requests with wrong params answered each, the rest passed on. A batch of
 * malformed elements only is answered element by element too, with the 400 of a bad request.
 */
export const screenBatch = (batch: ReadonlyArray<unknown>, versions: ReadonlyArray<string | undefined>): Screened => {
  const current = versions.find((version) => version !== undefined && version >= batchesRemovedIn)
  if (current !== undefined) {
    return {
      _tag: "Refused",
      status: 400,
      error: errorMessage(
        -32600,
        `Invalid Request: JSON-RPC batches were removed from MCP in ${batchesRemovedIn}, and this request is under ${current}: send the requests one at a time, each in its own POST`
      )
    }
  }
  if (batch.length === 0) {
    return { _tag: "Refused", status: 400, error: errorMessage(-32600, "Invalid Request: the batch is empty: send at least one JSON-RPC message") }
  }
  const answered: Array<JsonRpcErrorMessage> = []
  const rest: Array<unknown> = []
  batch.forEach((element, index) => {
    const wrong = malformed(element)
    if (wrong !== undefined) {
      const id = isRecord(element) && isId(element.id) ? element.id : null
      answered.push(errorMessage(-32600, `Invalid Request: element ${index} of the batch: ${wrong}`, id))
      return
    }
    const wrongParams = invalidParams(element)
    if (wrongParams !== undefined) answered.push(errorMessage(-32602, wrongParams.message, wrongParams.id))
    else rest.push(element)
  })
  // Nothing in it was a JSON-RPC message: a bad request as a whole, as one malformed message alone is (400).
  const malformedOnly = answered.length === batch.length && answered.every((answer) => answer.error.code === -32600)
  return malformedOnly ? { _tag: "Refused", status: 400, error: answered } : { _tag: "Screened", answered, rest }
}
