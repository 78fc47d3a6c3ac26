/**
 * What each request needs: nothing (the inspector's page shell and assets, health checks,
 * webhooks, which carry their own signatures, signing in and out, and asking whether the server
 * needs tokens), or a token whose scope includes
 * `read`, `run`, `deploy` or `admin`. Anything not listed as public needs a token, so a route
 * added later is protected by default.
 */
import type { TokenScope } from "./TokenScope.js"

/** What a request needs: nothing, or a token whose scope includes the one named. */
export type RouteAccess = "public" | TokenScope

/**
 * The inspector's pages (each serves the same shell; the client draws the page) and its assets.
 * The shell holds no data: everything it shows comes from `/api`, which needs a token.
 */
const inspectorShell = /^\/(?:(?:agents|instances|conversations|runs)(?:\/.*)?|approvals|schedules|playbooks|releases|assets\/inspector\.(?:js|css))?$/

/** Areas where every request needs `admin`; elsewhere under them, reading needs only `read`. */
const adminAreas = ["/api/tokens"]

/** Areas where reading needs `read` and every change needs `admin`. */
const adminChangeAreas = ["/api/schedules", "/api/retention", "/api/instances"]

/** Areas where reading needs `read` and every change needs `deploy`: what code the server runs. */
const deployChangeAreas = ["/api/releases"]

const within = (path: string, area: string): boolean => path === area || path.startsWith(`${area}/`)

/**
 * The path as routes are matched against it, for deciding access only: without its query,
 * percent-decoded, with repeated and trailing slashes dropped, so `/api/%74okens` or `//api/tokens/`
 * cannot pass for a path that needs less.
 */
export const normalizedPath = (url: string): string => {
  const raw = url.split(/[?#]/, 1)[0] ?? ""
  let decoded = raw
  try {
    decoded = decodeURIComponent(raw)
  } catch {
    // Not valid percent-encoding: no route matches it either; judge the text as it is.
  }
  const collapsed = decoded.replace(/\/{2,}/g, "/")
  return collapsed.length > 1 && collapsed.endsWith("/") ? collapsed.slice(0, -1) : collapsed || "/"
}

/** What a request with `method` to `url` (path and query) needs. */
export const routeAccess = (method: string, url: string): RouteAccess => {
  const path = normalizedPath(url)
  const reading = method === "GET" || method === "HEAD"
  // A CORS preflight carries no credentials by definition; the CORS policy answers it.
  if (method === "OPTIONS") return "public"
  if (reading && inspectorShell.test(path)) return "public"
  if (path === "/health") return "public"
  if (method === "POST" && path.startsWith("/hooks/")) return "public"
  // `GET` tells the mode (and the caller's own token, which it checks itself); signing in and out need no token.
  if (path === "/api/session" && (reading || method === "POST" || method === "DELETE")) return "public"
  if (adminAreas.some((area) => within(path, area))) return "admin"
  if (adminChangeAreas.some((area) => within(path, area))) return reading ? "read" : "admin"
  if (deployChangeAreas.some((area) => within(path, area))) return reading ? "read" : "deploy"
  // An MCP session's stream (GET) and its calls (POST) go together: a client that may not call tools has no use for it.
  if (within(path, "/mcp")) return "run"
  return reading ? "read" : "run"
}
