/**
 * What a server takes from its config once, as it starts, and cannot change while it runs: a
 * later build (a reload of `foundry dev`, a deploy) that changes one of them takes effect only
 * after a restart, and says so.
 */
import type { ConfigDefinition } from "../definitions/defineConfig.js"

/** The settings read at start, by the words a person reads them in; `listen` is where the server listens when the command line says. */
export const startSettings = (
  config: ConfigDefinition,
  listen: { readonly port?: number | undefined; readonly host?: string | undefined } = {}
): ReadonlyMap<string, string> => {
  const store = "sqlite" in config.store
    ? `sqlite ${config.store.sqlite}`
    : typeof config.store.postgres === "string"
    ? `postgres ${config.store.postgres}`
    : "postgres (Config)"
  return new Map([
    ["the store", store],
    ["the port", JSON.stringify(listen.port ?? config.server.port)],
    ["the host", JSON.stringify(listen.host ?? config.server.host)],
    ["server.bodyLimit", JSON.stringify(config.server.bodyLimit)],
    ["store.connectTimeout", "postgres" in config.store ? JSON.stringify(config.store.connectTimeout ?? null) : "null"],
    ["store.maxConnections", "postgres" in config.store ? JSON.stringify(config.store.maxConnections ?? null) : "null"],
    ["server.allowedHosts", JSON.stringify(config.server.allowedHosts ?? [])],
    ["concurrency", JSON.stringify(config.concurrency)],
    ["event retention", JSON.stringify(config.events)],
    ["auth", JSON.stringify(config.auth)]
  ])
}

/** The settings `after` changes from `before`, in words: "the port and auth"; undefined for none. */
export const changedSettings = (before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>): string | undefined => {
  const changed = [...after].flatMap(([name, value]) => before.get(name) === value ? [] : [name])
  return changed.length === 0 ? undefined : changed.length === 1 ? changed[0] : `${changed.slice(0, -1).join(", ")} and ${changed[changed.length - 1]}`
}
