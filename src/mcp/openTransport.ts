/**
 * The transport to one MCP server: a child process over stdio, or Streamable HTTP. Secrets in
 * `env` and `headers` are read from their `Config` here, when connecting, and go nowhere else.
 */
import { resolve } from "node:path"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { Effect, Redacted } from "effect"
import { boundedFetch } from "./boundedFetch.js"
import { type McpServerUnavailable, unavailable } from "./McpErrors.js"
import type { McpClientSdk } from "./mcpClientSdk.js"
import type { McpMount } from "./McpMount.js"
import { isStdio, type McpServerSpec } from "./McpServerSpec.js"

/** An opened transport, and what tells a person why it went away. */
export interface OpenedTransport {
  readonly transport: Transport
  /** The server's process id once started (stdio); `null` for HTTP. */
  readonly pid: () => number | null
  /** The end of what the server wrote to stderr (stdio): it often says why it died. */
  readonly stderr: () => string
  /**
   * Tells the server the session is over before the transport closes: an HTTP session is deleted
   * (`DELETE` with its session id), so that the server frees it at once; a process just exits.
   */
  readonly end: () => Promise<void>
}

type Values = NonNullable<Extract<McpServerSpec, { readonly headers?: unknown }>["headers"]>

/** The values of `env` or `headers`, secrets read; a missing one names its key (never a value). */
const readValues = (mount: McpMount, field: "env" | "headers", values: Values | undefined) =>
  Effect.forEach(Object.entries(values ?? {}), ([key, value]) =>
    typeof value === "string"
      ? Effect.succeed([key, value] as const)
      : value.pipe(
        Effect.map((secret) => [key, Redacted.value(secret)] as const),
        // A redacted Config's own message is "<redacted>"; its string form names the missing variable.
        Effect.mapError((error) =>
          unavailable(mount, `cannot read ${field}.${key}: ${String(error)}`)
        )
      )).pipe(Effect.map(Object.fromEntries<string>))

/** The most stderr kept from a stdio server. */
const stderrTail = 2_000

/** Opens (but does not start) the transport to `mount`'s server, with the SDK's transports. */
export const openTransport = (mount: McpMount, sdk: McpClientSdk): Effect.Effect<OpenedTransport, McpServerUnavailable> =>
  Effect.gen(function*() {
    const spec = mount.spec
    if (!isStdio(spec)) {
      const headers = yield* readValues(mount, "headers", spec.headers)
      const transport = new sdk.StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers }, fetch: boundedFetch })
      return { transport, pid: () => null, stderr: () => "", end: () => transport.terminateSession() }
    }
    const env = yield* readValues(mount, "env", spec.env)
    const transport = new sdk.StdioClientTransport({
      command: spec.command,
      args: [...(spec.args ?? [])],
      env,
      cwd: resolve(mount.root, spec.cwd ?? "."),
      stderr: "pipe"
    })
    // Kept for the log, never shown to the model: a server may print what it was configured with.
    let stderr = ""
    transport.stderr?.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString("utf8")).slice(-stderrTail)
    })
    return { transport, pid: () => transport.pid, stderr: () => stderr, end: () => Promise.resolve() }
  })
