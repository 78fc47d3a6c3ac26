/**
 * The inspector's session: signing in with a token (`POST /api/session`) makes a session of its
 * own, and the browser holds only that session's secret, in a cookie that scripts cannot read
 * (HttpOnly) and that no other site's page can make it send (SameSite=Strict). Never the token:
 * browsers do not keep cookies apart by port, so every other HTTP service on the same host (a dev
 * server, another user's server on a shared machine) is sent the cookie too; what it gets is a
 * session that ends at sign-out, with its token, or after `sessionLifetime`, and that nothing but
 * this server's cookie takes (not `Authorization: Bearer`). The cookie's name carries the server's
 * port, so two Foundry servers on one host keep their sessions apart instead of overwriting one.
 * It is not marked Secure: Foundry serves plain HTTP, and a browser drops a Secure cookie set over
 * it; behind a TLS-terminating proxy the cookie still travels only inside TLS between browser and proxy.
 */
import { HttpServer } from "@effect/platform"
import { Duration, Effect } from "effect"

/** How long a session lasts from sign-in, however it is used: a fixed end, so checking one writes nothing. */
export const sessionLifetime = Duration.hours(12)

/** The session cookie's name for a server on `port`. */
export const sessionCookieName = (port: number): string => `foundry_session_${port}`

/**
 * The cookie that held the token itself, before sessions: signing in or out expires it, so a
 * browser that held one stops sending the token to every service on the host.
 */
export const legacySessionCookie = "foundry_session"

/** The session cookie's name for the server this runs in (at the port it is bound to). */
export const serverSessionCookie: Effect.Effect<string, never, HttpServer.HttpServer> = Effect.map(
  HttpServer.HttpServer,
  ({ address }) => sessionCookieName(address._tag === "TcpAddress" ? address.port : 0)
)

/** The cookie's attributes. */
export const sessionCookieOptions = { httpOnly: true, sameSite: "strict", path: "/", secure: false } as const
