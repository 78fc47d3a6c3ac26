/**
 * An installed MCP server's URL in messages. It comes from an instance's config, where its query
 * (or user info) may hold a credential (`?token=...`), and so may its path (a secret URL such as
 * `/s/<token>/mcp`); messages reach the model, events and logs: the URL is shown as its origin,
 * and its query, and each long segment of its path, are masked wherever the transport or the
 * server quotes them back (a server may quote the request's URL in an error).
 */
import type { McpMount } from "./McpMount.js"
import { isStdio } from "./McpServerSpec.js"

/** The query's stand-in in messages. */
const maskedQuery = "?<redacted>"

/**
 * Path segments this long may be a token (a secret URL's): masked. Shorter ones (`mcp`, `v1`,
 * `sse`, a tenant's name) are what a person reads an error by.
 */
const tokenLength = 16

/** `path` with its segments that may be tokens masked. */
const maskedPath = (path: string): string =>
  path.split("/").map((segment) => segment.length >= tokenLength ? "<redacted>" : segment).join("/")

/**
 * `text` as messages about `mount`'s server may show it: unchanged for a declared server (its URL
 * is the project's), and for an installed one with its URL cut to the origin and its query masked.
 */
export const hideUrlSecrets = (mount: McpMount): (text: string) => string => {
  const spec = mount.spec
  if (isStdio(spec) || mount.instance === undefined) return (text) => text
  // The spec's pattern admits what `URL` may still refuse; such a URL is not shown at all.
  if (!URL.canParse(spec.url)) return (text) => text.replaceAll(spec.url, "its URL")
  const url = new URL(spec.url)
  const path = maskedPath(url.pathname)
  return (text) => {
    const cut = [spec.url, url.href].reduce((shown, whole) => shown.replaceAll(whole, url.origin), text)
    const pathCut = path === url.pathname ? cut : cut.replaceAll(url.pathname, path)
    return url.search === "" ? pathCut : pathCut.replaceAll(url.search, maskedQuery)
  }
}
