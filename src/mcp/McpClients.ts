/**
 * `McpClients`: the runtime's connections to the MCP servers its agents mount, one per declared
 * server, made on first use and closed with the runtime. A server's tools are offered as its
 * declaration's `tools` allowlist leaves them.
 */
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import { Config, Context, Duration, Effect, Layer, Schedule, Scope } from "effect"
import * as McpConnection from "./McpConnection.js"
import type { McpCallError, McpServerUnavailable } from "./McpErrors.js"
import type { McpMount } from "./McpMount.js"

/** The MCP servers agents use. */
export class McpClients extends Context.Tag("foundry/McpClients")<McpClients, {
  /** The tools `mount`'s server offers (its `tools` allowlist applied), connecting on first use. */
  readonly tools: (mount: McpMount) => Effect.Effect<ReadonlyArray<Tool>, McpServerUnavailable>
  /** Calls `tool` (the server's name for it) on `mount`'s server. */
  readonly call: (mount: McpMount, tool: string, args: Readonly<Record<string, unknown>>) => Effect.Effect<string, McpCallError>
}>() {}

/** How servers are started and brought back. */
export interface McpClientsOptions {
  /** A server that went away is restarted after `restartBase`, then after twice as long, up to `restartMax`. */
  readonly restartBase: Duration.DurationInput
  readonly restartMax: Duration.DurationInput
  /** How long starting a server and listing its tools may take. */
  readonly connectTimeout: Duration.DurationInput
}

/** What the runtime uses. */
export const defaults: McpClientsOptions = { restartBase: "200 millis", restartMax: "30 seconds", connectTimeout: "30 seconds" }

/**
 * Which connection serves a mount: one per declaring file and name, and a new one when the
 * declaration changes (a reload with another command). Secrets are not part of it: their values
 * are read only when connecting.
 */
const connectionKey = (mount: McpMount): string =>
  JSON.stringify([mount.declaredIn, mount.name, mount.root, mount.spec], (_key, value: unknown) => Config.isConfig(value) ? "<config>" : value)

/** The connections, closed when the layer's scope closes. */
export const make = (options: McpClientsOptions = defaults) =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const restart = Schedule.exponential(options.restartBase).pipe(Schedule.union(Schedule.spaced(options.restartMax)))
    const connections = new Map<string, McpConnection.McpConnection>()
    const lock = yield* Effect.makeSemaphore(1)

    const connectionOf = (mount: McpMount) =>
      lock.withPermits(1)(Effect.suspend(() => {
        const key = connectionKey(mount)
        const known = connections.get(key)
        if (known !== undefined) return Effect.succeed(known)
        return McpConnection.make(mount, { restart, connectTimeout: options.connectTimeout }).pipe(
          Scope.extend(scope),
          Effect.tap((made) => Effect.sync(() => connections.set(key, made)))
        )
      }))

    return McpClients.of({
      tools: (mount) =>
        Effect.flatMap(connectionOf(mount), (connection) => connection.tools).pipe(
          Effect.map((tools) => {
            const allowed = mount.spec.tools
            return allowed === undefined ? tools : tools.filter((tool) => allowed.includes(tool.name))
          })
        ),
      call: (mount, tool, args) => Effect.flatMap(connectionOf(mount), (connection) => connection.call(tool, args))
    })
  })

/** `McpClients`, its connections closed with the layer. */
export const layer = (options: McpClientsOptions = defaults): Layer.Layer<McpClients> => Layer.scoped(McpClients, make(options))
