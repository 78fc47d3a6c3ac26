/**
 * Whether the server asks for tokens, decided once at start from where it listens, what the
 * config says and whether the store holds a token. Loopback is open unless the config requires
 * auth; any other address exposes the API, so it needs tokens, and without one the server does not
 * start (it would answer every request with 401, or worse, be open).
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

/** The access mode for a server on `host`, with `required` from the config and `activeTokens` unrevoked tokens in the store. */
export const accessMode = (options: {
  readonly host: string
  readonly required: boolean
  readonly activeTokens: number
}): Either.Either<AccessMode, AccessRefused> => {
  if (isLoopback(options.host)) return Either.right(options.required ? "tokens" : "open")
  if (options.activeTokens > 0) return Either.right("tokens")
  return Either.left(
    new AccessRefused({
      message: `refusing to listen on ${options.host}: an address other than loopback needs API tokens, and the store has none.\n` +
        `  fix: create one with \`foundry token create --scope admin\` (clients send it as Authorization: Bearer <token>), ` +
        `or listen on loopback with --host 127.0.0.1`
    })
  )
}
