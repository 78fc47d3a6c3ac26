/**
 * `McpClients`: the runtime's connections to the MCP servers its agents mount, made on first use.
 * A server the project declares has one connection, open while the current build mounts it (a
 * reload or a deploy that changes or removes it leaves the old one to close once idle for
 * `idleTimeout`: runs on the build before may still use it). A server an instance installed has
 * one per agent, instance and declaration (its config's URL and credentials), closed when it has
 * been idle for `idleTimeout` and made again when next used. A server's tools are offered as its
 * declaration's `tools` allowlist leaves them.
 */
import { createHash } from "node:crypto"
import { Clock, Config, Context, Duration, Effect, ExecutionStrategy, Exit, Layer, Option, Schedule, Scope } from "effect"
import type { CompiledApp } from "../compiler/CompiledApp.js"
import { CurrentApp } from "../compiler/CurrentApp.js"
import * as McpConnection from "./McpConnection.js"
import type { McpCallError, McpServerUnavailable } from "./McpErrors.js"
import type { McpMount } from "./McpMount.js"
import type { ListedTool } from "./offerable.js"
import type { ToolResultContent } from "./toolResult.js"

/** The MCP servers agents use. */
export class McpClients extends Context.Tag("foundry/McpClients")<McpClients, {
  /** The tools `mount`'s server offers (its `tools` allowlist applied as they were listed), connecting on first use. */
  readonly tools: (mount: McpMount) => Effect.Effect<ReadonlyArray<ListedTool>, McpServerUnavailable>
  /** Calls `tool` (the server's name for it) on `mount`'s server. */
  readonly call: (mount: McpMount, tool: string, args: Readonly<Record<string, unknown>>) => Effect.Effect<ToolResultContent, McpCallError>
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

/** The connections of the servers `app`'s agents declare. */
const declaredKeys = (app: CompiledApp): ReadonlySet<string> =>
  new Set([...app.agents.values()].flatMap((agent) => agent.mcp.map(connectionKey)))

/** A connection in the pool. */
interface Pooled {
  readonly connection: McpConnection.McpConnection
  /** Its scope: closing it ends the connection (a server's process stopped). */
  readonly own: Scope.CloseableScope
  /** A server the project declares, open while the current build mounts it. */
  readonly declared: boolean
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
    // A pool made alone (without a build: a test's) retires nothing.
    const current = yield* Effect.serviceOption(CurrentApp)

    /**
     * Closes the declared servers' connections that the current build no longer mounts and that
     * nothing used for `idleTimeout` (a process per reload or deploy would otherwise pile up).
     */
    const retireUnmounted = (current: CurrentApp["Type"]) => Effect.gen(function*() {
      const mounted = declaredKeys(yield* current.get)
      const now = yield* Clock.currentTimeMillis
      const retired = yield* lock.withPermits(1)(Effect.sync(() => {
        const idle = [...connections].filter(([key, pooled]) =>
          pooled.declared && pooled.busy === 0 && now - pooled.lastUsed >= idleMillis && !mounted.has(key)
        )
        for (const [key] of idle) connections.delete(key)
        return idle.map(([, pooled]) => pooled)
      }))
      yield* Effect.forEach(retired, (pooled) => Scope.close(pooled.own, Exit.void), { discard: true })
    })
    if (Option.isSome(current)) {
      const every = Schedule.spaced(Duration.millis(Math.max(idleMillis / 2, 10)))
      yield* Effect.forkScoped(Effect.interruptible(Effect.repeat(retireUnmounted(current.value), every)))
    }

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
          const declared = mount.instance === undefined
          const made: Pooled = { connection, own, declared, busy: 1, lastUsed: yield* Clock.currentTimeMillis }
          connections.set(key, made)
          // Interruptible: forked from this uninterruptible acquisition, it would otherwise hold up closing the pool.
          if (!declared) yield* Effect.forkIn(Effect.interruptible(closeWhenIdle(key, made, own)), own)
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
      tools: (mount) => using(mount, (connection) => connection.tools),
      call: (mount, tool, args) => using(mount, (connection) => connection.call(tool, args))
    })
  })

/** `McpClients`, its connections closed with the layer. */
export const layer = (options: Partial<McpClientsOptions> = {}): Layer.Layer<McpClients> => Layer.scoped(McpClients, make(options))
