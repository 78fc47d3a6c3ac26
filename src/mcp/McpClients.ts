/**
 * `McpClients`: the runtime's connections to the MCP servers its agents mount, made on first use.
 * A server the project declares has one connection, closed with the runtime. A server an instance
 * installed has one per agent, instance and declaration (its config's URL and credentials), closed
 * when it has been idle for `idleTimeout` and made again when next used. A server's tools are
 * offered as its declaration's `tools` allowlist leaves them.
 */
import { createHash } from "node:crypto"
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import { Clock, Config, Context, Duration, Effect, ExecutionStrategy, Exit, Layer, Schedule, Scope } from "effect"
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

/** How servers are started, brought back and let go. */
export interface McpClientsOptions {
  /** A server that went away is restarted after `restartBase`, then after twice as long, up to `restartMax`. */
  readonly restartBase: Duration.DurationInput
  readonly restartMax: Duration.DurationInput
  /** How long starting a server and listing its tools may take. */
  readonly connectTimeout: Duration.DurationInput
  /** How long an instance's connection to a server it installed stays open unused. */
  readonly idleTimeout: Duration.DurationInput
}

/** What the runtime uses. */
export const defaults: McpClientsOptions = {
  restartBase: "200 millis",
  restartMax: "30 seconds",
  connectTimeout: "30 seconds",
  idleTimeout: "5 minutes"
}

/**
 * Which connection serves a mount. A declared server: one per declaring file and name, and a new
 * one when the declaration changes (a reload with another command); its secrets are `Config`
 * values, read only when connecting. An installed server: one per agent and instance, and a new
 * one when its declaration changes (a new token); the declaration holds the config's secrets in
 * clear, so only its hash is part of the key.
 */
const connectionKey = (mount: McpMount): string =>
  mount.instance === undefined
    ? JSON.stringify([mount.declaredIn, mount.name, mount.root, mount.spec], (_key, value: unknown) => Config.isConfig(value) ? "<config>" : value)
    : JSON.stringify([
      mount.instance.agent,
      mount.instance.id,
      mount.declaredIn,
      mount.name,
      mount.root,
      createHash("sha256").update(JSON.stringify(mount.spec)).digest("hex")
    ])

/** A connection in the pool. */
interface Pooled {
  readonly connection: McpConnection.McpConnection
  /** Calls and listings under way: a connection in use is never idle. */
  busy: number
  lastUsed: number
}

/** The connections, closed when the layer's scope closes. */
export const make = (options: Partial<McpClientsOptions> = {}) =>
  Effect.gen(function*() {
    const settings = { ...defaults, ...options }
    const scope = yield* Effect.scope
    const restart = Schedule.exponential(settings.restartBase).pipe(Schedule.union(Schedule.spaced(settings.restartMax)))
    const idleMillis = Duration.toMillis(Duration.decode(settings.idleTimeout))
    const connections = new Map<string, Pooled>()
    const lock = yield* Effect.makeSemaphore(1)

    /** Closes an instance's connection once nothing used it for `idleTimeout`; a use meanwhile starts the wait again. */
    const closeWhenIdle = (key: string, pooled: Pooled, own: Scope.CloseableScope): Effect.Effect<void> =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        // How long to wait before looking again; 0: idle, and taken out of the pool.
        const wait = yield* lock.withPermits(1)(Effect.sync(() => {
          if (pooled.busy > 0) return idleMillis
          const left = pooled.lastUsed + idleMillis - now
          if (left > 0) return left
          connections.delete(key)
          return 0
        }))
        if (wait === 0) return yield* Scope.close(own, Exit.void)
        yield* Effect.sleep(Duration.millis(wait))
        return yield* closeWhenIdle(key, pooled, own)
      })

    /** The mount's connection, marked in use until `use` ends. */
    const using = <A, E>(mount: McpMount, use: (connection: McpConnection.McpConnection) => Effect.Effect<A, E>) =>
      Effect.acquireUseRelease(
        lock.withPermits(1)(Effect.gen(function*() {
          const key = connectionKey(mount)
          const known = connections.get(key)
          if (known !== undefined) {
            known.busy++
            return known
          }
          // Its own scope, so that an idle one is closed alone; a declared server's lives as long as the pool.
          const own = yield* Scope.fork(scope, ExecutionStrategy.sequential)
          const connection = yield* Scope.extend(McpConnection.make(mount, { restart, connectTimeout: settings.connectTimeout }), own)
          const made: Pooled = { connection, busy: 1, lastUsed: yield* Clock.currentTimeMillis }
          connections.set(key, made)
          // Interruptible: forked from this uninterruptible acquisition, it would otherwise hold up closing the pool.
          if (mount.instance !== undefined) yield* Effect.forkIn(Effect.interruptible(closeWhenIdle(key, made, own)), own)
          return made
        })),
        (pooled) => use(pooled.connection),
        (pooled) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            Effect.sync(() => {
              pooled.busy--
              pooled.lastUsed = now
            }))
      )

    return McpClients.of({
      tools: (mount) =>
        using(mount, (connection) => connection.tools).pipe(
          Effect.map((tools) => {
            const allowed = mount.spec.tools
            return allowed === undefined ? tools : tools.filter((tool) => allowed.includes(tool.name))
          })
        ),
      call: (mount, tool, args) => using(mount, (connection) => connection.call(tool, args))
    })
  })

/** `McpClients`, its connections closed with the layer. */
export const layer = (options: Partial<McpClientsOptions> = {}): Layer.Layer<McpClients> => Layer.scoped(McpClients, make(options))
