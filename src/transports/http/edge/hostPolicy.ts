/**
 * Which `Host` headers the server answers. A page on a name the attacker controls can re-point that
 * name at 127.0.0.1 (DNS rebinding); the browser then sends the attacker's name as `Host`. So only
 * names that cannot be rebound pass by themselves (`localhost`, IP literals, the configured bind
 * host) at the server's port; every other name must be listed in `server.allowedHosts`.
 */
import { isIP } from "node:net"

/** The parts of a `Host` header; `undefined` for one that is not `host[:port]`. */
const parseHost = (header: string): { readonly name: string; readonly port: number | undefined } | undefined => {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]/@]+)(?::(\d{1,5}))?$/.exec(header)
  if (match === null) return undefined
  const name = (match[1] ?? "").toLowerCase()
  return { name, port: match[2] === undefined ? undefined : Number(match[2]) }
}

const unbracketed = (name: string) => name.startsWith("[") ? name.slice(1, -1) : name

/** What a `Host` header is checked against. */
export interface HostPolicy {
  /** The port the server listens on. */
  readonly port: number
  /** The host it was told to bind (`server.host`). */
  readonly boundHost: string
  /** `server.allowedHosts`: `name` (any port) or `name:port`. */
  readonly allowedHosts: ReadonlyArray<string>
}

/** Whether a request with this `Host` header is answered. */
export const isAllowedHost = (header: string | undefined, policy: HostPolicy): boolean => {
  if (header === undefined) return false
  const host = parseHost(header)
  if (host === undefined) return false
  // Listed names: the operator vouches for them (a proxy's name, a LAN name).
  const listed = policy.allowedHosts.some((entry) => {
    const allowed = parseHost(entry)
    return allowed !== undefined && allowed.name === host.name && (allowed.port === undefined || allowed.port === host.port)
  })
  if (listed) return true
  // Without a port the browser means 80: only a server on 80 is reached that way.
  if ((host.port ?? 80) !== policy.port) return false
  const name = unbracketed(host.name)
  return name === "localhost" || isIP(name) !== 0 || name === unbracketed(policy.boundHost.toLowerCase())
}
