/**
 * The inspector's session: after signing in with a token (`POST /api/session`), the browser holds
 * the token in a cookie that scripts cannot read (HttpOnly) and that no other site's page can
 * make it send (SameSite=Strict). The cookie is not marked Secure: Foundry serves plain HTTP, and
 * a browser drops a Secure cookie set over it; behind a TLS-terminating proxy the cookie still
 * travels only inside TLS between browser and proxy.
 */
import { HttpApiSecurity } from "@effect/platform"

/** The session cookie, as the OpenAPI document declares it. */
export const sessionCookie = HttpApiSecurity.apiKey({ in: "cookie", key: "foundry_session" })

/** The cookie's attributes. */
export const sessionCookieOptions = { httpOnly: true, sameSite: "strict", path: "/", secure: false } as const
