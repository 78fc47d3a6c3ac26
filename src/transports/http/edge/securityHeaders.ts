/**
 * Headers on every response, errors included: no script but the server's own files (the inspector
 * has no inline script), no framing, no MIME sniffing, no referrer sent on.
 */
import { HttpApp, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"

/**
 * The content security policy. `style-src-attr 'unsafe-inline'` because the inspector sizes its
 * trace bars with `style` attributes: they can style, never run script.
 */
export const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "style-src-attr 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'"
].join("; ")

/** The headers every response carries. */
export const securityHeaders: Readonly<Record<string, string>> = {
  "content-security-policy": contentSecurityPolicy,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY"
}

/** Adds `headers` to the response of the current request, whatever produces it. */
export const addToResponse = (headers: Readonly<Record<string, string>>) =>
  HttpApp.appendPreResponseHandler((_request, response) => Effect.succeed(HttpServerResponse.setHeaders(response, headers)))

/**
 * Adds those of `headers` the response of the current request does not set itself: a response
 * with a stricter policy of its own (an agent's file, downloaded: `sandbox`) keeps it.
 */
export const addUnlessSet = (headers: Readonly<Record<string, string>>) =>
  HttpApp.appendPreResponseHandler((_request, response) =>
    Effect.succeed(HttpServerResponse.setHeaders(response, Object.fromEntries(Object.entries(headers).filter(([name]) => response.headers[name] === undefined)))))
