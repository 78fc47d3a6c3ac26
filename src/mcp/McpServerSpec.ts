/**
 * How a project declares an MCP server whose tools its agents use: a process spoken to over stdio
 * (`command`, `args`, `env`, `cwd`) or a Streamable HTTP endpoint (`url`, `headers`). Declared in
 * an agent's `mcp` or, to share one between agents, in the config's `mcp`, which agents then name
 * with `true`. Pure data: nothing here connects.
 */
import { Config, Duration, Option, ParseResult, type Redacted, Schema } from "effect"
import { Text } from "../definitions/configFields.js"

/** How long one tool call may take when a server sets no `timeout`. */
export const defaultMcpTimeout: Duration.DurationInput = "60 seconds"

/**
 * The name a server is mounted under; its tools reach the model as `<name>__<tool>`, so the name
 * holds no `__` of its own and leaves room for tool names within the models' 64 characters.
 */
export const McpServerName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_))*$/, {
    description: `a server name of letters, digits, - and _ (no "__"), e.g. "files"`
  }),
  Schema.maxLength(32, { description: "a server name of at most 32 characters" })
)

/** A secret read from the environment when the server is connected, e.g. `Config.redacted("GITHUB_TOKEN")`. */
const SecretConfig = Schema.declare(
  (input: unknown): input is Config.Config<Redacted.Redacted> => Config.isConfig(input),
  { identifier: "Config", description: `a string or a Config value such as Config.redacted("API_TOKEN")` }
)

/** A header or environment value: as written, or a secret read when connecting (never logged, never in events). */
const Value = Schema.Union(Schema.String, SecretConfig)

/** A timeout above zero; `Duration.decodeUnknown` reads what Effect reads ("30 seconds", milliseconds, a Duration). */
const Timeout = Schema.declare(
  (input: unknown): input is Duration.DurationInput =>
    Option.exists(Duration.decodeUnknown(input), (duration) => Duration.greaterThan(duration, Duration.zero)),
  { identifier: "Timeout", description: `a duration above zero such as "30 seconds" (or milliseconds as a number)` }
)

/** What every server may set. */
const options = {
  /** How long one tool call may take before the model is told it timed out; default 60 seconds. */
  timeout: Schema.optional(Timeout),
  /** The server's tools the agent gets, by the server's names for them; all when absent. */
  tools: Schema.optional(Schema.Array(Text))
}

/** A server run as a child process, spoken to over its stdin and stdout. */
export const McpStdioServerSchema = Schema.Struct({
  command: Text,
  args: Schema.optional(Schema.Array(Schema.String)),
  /** Added to a small inherited environment (PATH, HOME, ...), not to the whole of Foundry's. */
  env: Schema.optional(Schema.Record({ key: Schema.String, value: Value })),
  /** Relative to the project folder, which is also the default. */
  cwd: Schema.optional(Text),
  ...options
}).annotations({ identifier: "McpStdioServer" })

/** A server reached over Streamable HTTP. */
export const McpHttpServerSchema = Schema.Struct({
  // By pattern, not with `URL`: route files are type-checked without the DOM's or Node's globals.
  url: Text.pipe(Schema.filter((url) => /^https?:\/\/[^\s/?#]+([/?#]\S*)?$/.test(url), {
    description: "an http:// or https:// URL"
  })),
  headers: Schema.optional(Schema.Record({ key: Schema.String, value: Value })),
  ...options
}).annotations({ identifier: "McpHttpServer" })

const serverKinds = `{ command, args?, env?, cwd? } (stdio) or { url, headers? } (Streamable HTTP)`

const holds = (input: unknown, key: string): boolean => typeof input === "object" && input !== null && key in input

/**
 * One MCP server: stdio or Streamable HTTP. The kind a declaration means is read from its keys
 * (`command` or `url`), so that what is wrong with it is said against that kind, not both.
 */
export const McpServerSchema = Schema.transformOrFail(
  Schema.Unknown,
  Schema.typeSchema(Schema.Union(McpStdioServerSchema, McpHttpServerSchema)),
  {
    strict: true,
    decode: (input, options, ast) =>
      holds(input, "command")
        ? ParseResult.decodeUnknown(McpStdioServerSchema)(input, options)
        : holds(input, "url")
        ? ParseResult.decodeUnknown(McpHttpServerSchema)(input, options)
        : ParseResult.fail(new ParseResult.Type(ast, input, `expected an MCP server: ${serverKinds}`)),
    encode: ParseResult.succeed
  }
).annotations({ identifier: "McpServer", description: `an MCP server: ${serverKinds}` })

/** One MCP server: stdio or Streamable HTTP. */
export type McpServerSpec = typeof McpServerSchema.Type

/**
 * Servers by name. A wrong name is reported as such (a Record whose key schema refuses it would
 * call the entry "not allowed").
 */
const byName = <A, I>(server: Schema.Schema<A, I>) =>
  Schema.Record({ key: Schema.String, value: server }).pipe(
    Schema.filter((servers) =>
      Object.keys(servers).flatMap((name) =>
        Schema.is(McpServerName)(name)
          ? []
          : [{ path: [name], message: `${JSON.stringify(name)} is not a server name: use letters, digits, - and _ (no "__"), at most 32` }]
      )
    )
  )

/** The config's shared servers, by name. */
export const McpServersSchema = byName(McpServerSchema)

/** An agent's servers by name: its own declaration, or `true` for the config's server of that name. */
export const AgentMcpSchema = byName(Schema.Union(Schema.Literal(true), McpServerSchema))

/** An agent's servers by name. */
export type AgentMcp = typeof AgentMcpSchema.Type

/** Whether a server is spoken to over stdio. */
export const isStdio = (spec: McpServerSpec): spec is typeof McpStdioServerSchema.Type => "command" in spec
