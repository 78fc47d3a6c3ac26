/**
 * The params of a request Foundry serves that the MCP SDK would refuse with its schema's dump as an
 * internal error (-32603): found here first, and answered as what they are, invalid params
 * (-32602), in words a client's author reads. Checked against the SDK's own schemas of the methods
 * served, so that nothing the SDK refuses gets past; the common mistakes are said as the shape
 * expected. Loaded with the SDK, by the endpoint's first request.
 */
import {
  CallToolRequestSchema,
  InitializeRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
  ReadResourceRequestSchema
} from "@modelcontextprotocol/sdk/types.js"

/** What is wrong with one request's params, with the request's id. */
export interface InvalidParams {
  readonly id: string | number
  readonly message: string
}

/** One thing wrong, as the SDK's schema says it. */
interface Issue {
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

/** A method's schema, as far as it is used here. */
interface RequestSchema {
  readonly safeParse: (value: unknown) => { readonly success: true } | { readonly success: false; readonly error: { readonly issues: ReadonlyArray<Issue> } }
}

/** The requests the endpoint's server answers (`initialize` and `ping` are the SDK's own). */
const served: ReadonlyMap<string, RequestSchema> = new Map<string, RequestSchema>([
  ["initialize", InitializeRequestSchema],
  ["ping", PingRequestSchema],
  ["tools/list", ListToolsRequestSchema],
  ["tools/call", CallToolRequestSchema],
  ["resources/list", ListResourcesRequestSchema],
  ["resources/templates/list", ListResourceTemplatesRequestSchema],
  ["resources/read", ReadResourceRequestSchema]
])

/** The params each method takes, said as JSON, for a request whose params are not even an object. */
const shapes: Readonly<Record<string, string>> = {
  "initialize": `{ "protocolVersion": "<version>", "capabilities": { ... }, "clientInfo": { "name": "<client>", "version": "<version>" } }`,
  "ping": `{} or none`,
  "tools/list": `{ "cursor": "<nextCursor of the page before>" } or none`,
  "tools/call": `{ "name": "<tool>", "arguments": { ... } }`,
  "resources/list": `{ "cursor": "<nextCursor of the page before>" } or none`,
  "resources/templates/list": `{ "cursor": "<nextCursor of the page before>" } or none`,
  "resources/read": `{ "uri": "<resource>" } (resources/list lists them)`
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** What a JSON value is, in a word: "a number", "an array". */
const kindOf = (value: unknown): string =>
  value === undefined ? "nothing" : value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`

/** Words for the mistakes clients make most, before the schema's own. */
const commonMistake = (method: string, params: unknown): string | undefined => {
  if (params !== undefined && !isRecord(params)) return `expected params ${shapes[method]}, got ${kindOf(params)}`
  if (method === "tools/call") {
    if (!isRecord(params)) return `expected params ${shapes[method]}`
    if (typeof params.name !== "string" || params.name === "") return `params.name: expected the name of a tool (tools/list lists them)`
    if (params.arguments !== undefined && !isRecord(params.arguments)) {
      return `params.arguments: expected an object of the tool's arguments, got ${Array.isArray(params.arguments) ? "an array" : typeof params.arguments}`
    }
  }
  if (method === "resources/read" && !(isRecord(params) && typeof params.uri === "string")) return `expected params ${shapes[method]}`
  if (method === "initialize" && !isRecord(params)) return `expected params ${shapes[method]}`
  if (isRecord(params) && "cursor" in params && typeof params.cursor !== "string") {
    return `params.cursor: expected the nextCursor (a string) of the page before, got ${kindOf(params.cursor)}`
  }
  return undefined
}

/** An issue of the SDK's schema in words: where, and what was expected there. */
const described = (issue: Issue): string => {
  const where = issue.path.map(String).join(".")
  const what = issue.message.replace(/^Invalid input: /, "").replace(/, received /, ", got ")
  if (where.endsWith("_meta.progressToken")) return `${where}: expected a string or a number`
  return what === "Invalid input" ? `${where}: not a value this field takes` : `${where}: ${what}`
}

/** Why the params of `message` (one JSON-RPC request) are not what its method takes; `undefined` when they are. */
export const invalidParams = (message: unknown): InvalidParams | undefined => {
  if (!isRecord(message) || (typeof message.id !== "string" && typeof message.id !== "number")) return undefined
  const { id, method, params } = message
  const schema = typeof method === "string" ? served.get(method) : undefined
  if (typeof method !== "string" || schema === undefined) return undefined
  const wrong = (text: string): InvalidParams => ({ id, message: `Invalid params for ${method}: ${text}` })
  const common = commonMistake(method, params)
  if (common !== undefined) return wrong(common)
  const parsed = schema.safeParse({ method, params })
  return parsed.success ? undefined : wrong(parsed.error.issues.map(described).join("; "))
}
