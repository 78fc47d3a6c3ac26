/**
 * Whether the server asks for tokens, decided once at start from where it listens, the names a
 * proxy serves it by, what the config says and whether the store holds a token. Loopback is open
 * unless the config requires auth; any other address, or a name in `server.allowedHosts` that is
 * not loopback (a proxy in front), exposes the API, so it needs tokens, and without one the server
 * does not start (it would answer every request with 401, or worse, be open).
 */
import { isIP } from "node:net"
import { Data, Either } from "effect"

/** How the server treats requests: `open` lets every request in; `tokens` needs a token on every route that is not public. */
export type AccessMode = "open" | "tokens"

/** The server must not start as configured; `message` says why and what to do. */
export class AccessRefused extends Data.TaggedError("AccessRefused")<{ readonly message: string }> {}

/** Whether `host` is a loopback address (or the name of one): reachable from this machine only. */
export const isLoopback = (host: string): boolean => {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host
  if (bare === "localhost" || bare === "::1") return true
  if (isIP(bare) === 4) return bare.startsWith("127.")
  // An IPv4-mapped IPv6 loopback address, e.g. ::ffff:127.0.0.1.
  return bare.toLowerCase().startsWith("::ffff:127.")
}

/** The names of `server.allowedHosts` that are not loopback: names a proxy serves this server by, beyond this machine. */
export const exposedNames = (allowedHosts: ReadonlyArray<string>): ReadonlyArray<string> =>
  allowedHosts.filter((entry) => !isLoopback(/^\[[^\]]*\]/.exec(entry)?.[0] ?? entry.replace(/:\d+$/, "")))

/** Whether a server on `host`, reached by the names `exposedAs` (through a proxy), is reachable from beyond this machine. */
export const isExposed = (host: string, exposedAs: ReadonlyArray<string>): boolean => !isLoopback(host) || exposedAs.length > 0

/**
 * The access mode for a server on `host`, reached by the names `exposedAs` (through a proxy),
 * with `required` from the config and `activeTokens` unrevoked tokens in the store.
 */
export const accessMode = (options: {
  readonly host: string
  readonly exposedAs: ReadonlyArray<string>
  readonly required: boolean
  readonly activeTokens: number
}): Either.Either<AccessMode, AccessRefused> => {
  if (!isExposed(options.host, options.exposedAs)) return Either.right(options.required ? "tokens" : "open")
  if (options.activeTokens > 0) return Either.right("tokens")
  const fix = `  fix: create one with \`foundry token create --scope admin\` (clients send it as Authorization: Bearer <token>)`
  return Either.left(
    new AccessRefused({
      message: isLoopback(options.host)
        ? `refusing to serve ${options.exposedAs.join(", ")} (server.allowedHosts): a proxy serves this server beyond this machine by those names, ` +
          `which needs API tokens, and the store has none.\n${fix}, or leave those names out of server.allowedHosts`
        : `refusing to listen on ${options.host}: an address other than loopback needs API tokens, and the store has none.\n` +
          `${fix}, or listen on loopback with --host 127.0.0.1`
    })
  )
}
