/**
 * The params of a request Foundry serves that the MCP SDK would refuse with its schema's dump as an
 * internal error (-32603): found here first, and answered as what they are, invalid params
 * (-32602), in words a client's author reads.
 */

/** What is wrong with one request's params, with the request's id; `undefined` when nothing is. */
export interface InvalidParams {
  readonly id: string | number
  readonly message: string
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Why the params of `message` (one JSON-RPC request) are not what its method takes. */
export const invalidParams = (message: unknown): InvalidParams | undefined => {
  if (!isRecord(message) || (typeof message.id !== "string" && typeof message.id !== "number")) return undefined
  const { id, method, params } = message
  const wrong = (text: string): InvalidParams => ({ id, message: `Invalid params for ${String(method)}: ${text}` })
  if (method === "tools/call") {
    if (!isRecord(params)) return wrong(`expected params { "name": "<tool>", "arguments": { ... } }`)
    if (typeof params.name !== "string" || params.name === "") return wrong(`params.name: expected the name of a tool (tools/list lists them)`)
    if (params.arguments !== undefined && !isRecord(params.arguments)) {
      return wrong(`params.arguments: expected an object of the tool's arguments, got ${Array.isArray(params.arguments) ? "an array" : typeof params.arguments}`)
    }
  }
  if (method === "resources/read" && !(isRecord(params) && typeof params.uri === "string")) {
    return wrong(`expected params { "uri": "<resource>" } (resources/list lists them)`)
  }
  return undefined
}
