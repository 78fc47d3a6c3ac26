/**
 * The modules of one session, with the tools modules of MCP servers (`defineTools({ mcp })`)
 * connected apart from opening it: only scripts that import such a module need its server. A
 * server that cannot be reached as the session opens (or does not list its tools within
 * `openWait`) leaves the session open and its module unreached; each script that imports it tries
 * again, and fails alone, saying which module, which server and why, while it stays unreached.
 * The attempts are spaced by the MCP connection pool (`McpClients`): after a failed one, callers
 * are refused at once with its error until a backoff has passed, so a loop of scripts does not
 * hammer a dead server; once the server answers, the module's tools and declarations are there.
 */
import { Duration, Effect, Either } from "effect"
import { McpClients } from "../mcp/McpClients.js"
import type { McpMount } from "../mcp/McpMount.js"
import type { EnvironmentDefinition } from "../definitions/defineEnvironment.js"
import { type McpListing, mcpModulesOf, type ResolvedModules, resolveModules, ToolsModuleUnavailable } from "./scriptModules.js"

/** How long opening a session waits for an MCP server's tools; a slower one goes on starting, for the scripts that import it. */
const openWait = Duration.seconds(5)

/** A session's modules. */
export interface SessionModules {
  /** The modules as known now: an unreached server's module offers no tools of it (and says why in its declarations). */
  readonly current: () => ResolvedModules
  /**
   * The modules, with those of `imports` that are unreached connected again; still unreached, the
   * error names them, their servers and why.
   */
  readonly connect: (imports: ReadonlyArray<string>) => Effect.Effect<ResolvedModules, ToolsModuleUnavailable>
}

/** Opens `environment`'s modules; fails only when one names an MCP server the agent does not mount. */
export const openModules = Effect.fn("environments.openModules")(function*(
  environment: EnvironmentDefinition,
  projectRoot: string,
  mounts: ReadonlyArray<McpMount>
) {
  const clients = yield* McpClients
  const served = yield* mcpModulesOf(environment, mounts)
  const resolved = yield* resolveModules(environment, projectRoot, mounts)
  const listings = new Map<string, McpListing>()

  /** What `mount`'s server lists, or why it could not be reached. */
  const list = (mount: McpMount, wait: Duration.Duration | undefined) =>
    clients.tools(mount).pipe(
      Effect.map((tools): McpListing => Either.right(tools.map((listed) => listed.tool))),
      Effect.catchTag("McpServerUnavailable", (error) => Effect.succeed<McpListing>(Either.left(error.message))),
      // Interrupting the wait leaves the pool's attempt running: a script importing the module joins it.
      (listed) => wait === undefined ? listed : Effect.timeoutTo(listed, {
        duration: wait,
        onSuccess: (listing) => listing,
        onTimeout: (): McpListing => Either.left(`MCP server ${mount.name} did not list its tools within ${Duration.format(wait)} as the session opened (it may still be starting)`)
      })
    )

  const listAll = (which: typeof served, wait: Duration.Duration | undefined) =>
    Effect.forEach(which, ({ mount, name }) => Effect.map(list(mount, wait), (listing) => listings.set(name, listing)), {
      concurrency: "unbounded",
      discard: true
    })

  yield* listAll(served, openWait)
  let modules = resolved(listings)

  const unreached = (names: ReadonlyArray<string>) =>
    served.filter(({ name }) => names.includes(name) && !Either.isRight(listings.get(name) ?? Either.left("")))

  const connect = Effect.fnUntraced(function*(imports: ReadonlyArray<string>) {
    const retried = unreached(imports)
    if (retried.length === 0) return modules
    yield* listAll(retried, undefined)
    modules = resolved(listings)
    const still = unreached(imports)
    if (still.length === 0) return modules
    return yield* new ToolsModuleUnavailable({
      message: still.map(({ name }) => {
        const listing = listings.get(name)
        const why = listing !== undefined && Either.isLeft(listing) ? listing.left : "its MCP server was not reached"
        return `env:${name} is not available: ${why}. Only scripts that import env:${name} need its server: the next one to run connects again (after a short backoff)`
      }).join("\n")
    })
  })

  const sessionModules: SessionModules = { current: () => modules, connect }
  return sessionModules
})
