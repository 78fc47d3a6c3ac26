/**
 * The edge's checks of who is asking: `Host` against the bound address and `server.allowedHosts`
 * (DNS rebinding), `Origin` against the server's own and `server.allowedOrigins`, CORS only for
 * `server.cors.origins`, and the security headers on every answer. Real HTTP on loopback; `Host`
 * is set with node:http, since fetch forbids it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { bearer, issue } from "../auth/support.js"
import { http, runIdOf, startServer } from "../support/server.js"
import { agentFile, tempProject } from "../support/tempProject.js"
import { type RawAnswer, rawRequest } from "./edgeClient.js"

const configured = {
  "agents/echo/agent.ts": agentFile(),
  "foundry.config.ts": `import { defineConfig } from "foundry"
export default defineConfig({
  server: {
    allowedHosts: ["foundry.lan", "proxy.example:8443"],
    allowedOrigins: ["http://app.example"],
    cors: { origins: ["http://ui.example"] }
  }
})
`
}
const plain = { "agents/echo/agent.ts": agentFile() }
const runBody = JSON.stringify({ agent: "echo", message: "hi" })
const json = { "content-type": "application/json" }

/**
 * A server of the configured project: its `allowedHosts` name hosts beyond this machine (a proxy's),
 * so it asks for tokens; `auth` carries an admin token.
 */
const configuredServer = Effect.gen(function*() {
  const storeFile = join(mkdtempSync(join(tmpdir(), "foundry-store-")), "foundry.db")
  const { token } = yield* issue(storeFile, "admin")
  const server = yield* startServer(yield* tempProject(configured), { storeFile })
  return { server, auth: bearer(token) }
})

const statusOf = (answer: RawAnswer) => answer._tag === "response" ? answer.status : answer.code
const headerOf = (answer: RawAnswer, name: string) => answer._tag === "response" ? answer.headers[name] : undefined
const portOf = (url: string) => new URL(url).port

describe("the Host check", () => {
  it.scopedLive("answers the bound address, localhost and IP literals at its port, and listed names; refuses others naming the fix", () =>
    Effect.gen(function*() {
      const { auth, server } = yield* configuredServer
      const port = portOf(server.url)
      const get = (host: string) => rawRequest(server.url, { path: "/api/runs", headers: { host, ...auth } })
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`, `[::1]:${port}`, "foundry.lan", `foundry.lan:${port}`, "proxy.example:8443"]) {
        expect([host, statusOf(yield* get(host))]).toEqual([host, 200])
      }
      for (const host of [`evil.example:${port}`, "evil.example", `localhost:${Number(port) + 1}`, "proxy.example:9999", `127.0.0.1.nip.io:${port}`, "a b"]) {
        const answer = yield* get(host)
        expect([host, statusOf(answer)]).toEqual([host, 403])
        expect(answer._tag === "response" ? answer.json : undefined).toEqual({
          _tag: "HostNotAllowed",
          message: expect.stringContaining("add it to server.allowedHosts in foundry.config.ts")
        })
      }
      // A rebinding page can only post to its own name: refused before anything runs.
      const posted = yield* rawRequest(server.url, { method: "POST", path: "/api/runs", headers: { ...json, ...auth, host: `evil.example:${port}` }, body: runBody })
      expect(statusOf(posted)).toBe(403)
      expect((yield* http(`${server.url}/api/runs`, { headers: auth })).json).toEqual([])
    }))
})

describe("a proxy in front of a loopback server", () => {
  it.scopedLive("a forwarded request to an open server is refused, saying to require tokens; names a proxy serves need tokens to start", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(plain))
      for (const header of ["x-forwarded-for", "forwarded", "x-real-ip"]) {
        const answer = yield* rawRequest(server.url, { method: "POST", path: "/api/runs", headers: { ...json, [header]: "203.0.113.9" }, body: runBody })
        expect([header, statusOf(answer)]).toEqual([header, 401])
        expect(answer._tag === "response" ? answer.json : undefined).toMatchObject({
          _tag: "Unauthorized",
          message: expect.stringContaining("set auth: { required: true } in foundry.config.ts")
        })
      }
      expect((yield* http(`${server.url}/api/runs`)).json).toEqual([])
      // Served by a public name through a proxy, with no token in the store: it does not start.
      const exposed = yield* Effect.exit(startServer(yield* tempProject(configured)))
      expect(String(exposed)).toContain("refusing to serve foundry.lan, proxy.example:8443 (server.allowedHosts)")
    }))
})

describe("the Origin check", () => {
  it.scopedLive("lets requests without Origin and from allowed origins change state, refuses other origins", () =>
    Effect.gen(function*() {
      const { auth, server } = yield* configuredServer
      const post = (headers: Record<string, string>) =>
        rawRequest(server.url, { method: "POST", path: "/api/runs", headers: { ...json, ...auth, ...headers }, body: runBody })
      expect(statusOf(yield* post({}))).toBe(202)
      expect(statusOf(yield* post({ origin: server.url }))).toBe(202)
      expect(statusOf(yield* post({ origin: "http://app.example" }))).toBe(202)
      expect(statusOf(yield* post({ origin: "http://ui.example" }))).toBe(202)
      for (const origin of ["http://evil.example", "null", `https://evil.example:${portOf(server.url)}`, "http://app.example.evil"]) {
        const answer = yield* post({ origin })
        expect([origin, statusOf(answer)]).toEqual([origin, 403])
        expect(answer._tag === "response" ? answer.json : undefined).toEqual({
          _tag: "OriginNotAllowed",
          message: expect.stringContaining("server.allowedOrigins")
        })
      }
      expect((yield* http(`${server.url}/api/runs`, { headers: auth })).json).toHaveLength(4)
    }))

  it.scopedLive("a cross-site browser read is refused; a foreign origin's plain GET is served without CORS headers", () =>
    Effect.gen(function*() {
      const { auth, server } = yield* configuredServer
      const crossSite = yield* rawRequest(server.url, { path: "/api/runs", headers: { ...auth, origin: "http://evil.example", "sec-fetch-site": "cross-site" } })
      expect(statusOf(crossSite)).toBe(403)
      const plainGet = yield* rawRequest(server.url, { path: "/api/runs", headers: { ...auth, origin: "http://evil.example" } })
      expect(statusOf(plainGet)).toBe(200)
      expect(headerOf(plainGet, "access-control-allow-origin")).toBeUndefined()
      const own = yield* rawRequest(server.url, { path: "/api/runs", headers: { ...auth, origin: server.url, "sec-fetch-site": "same-origin" } })
      expect(statusOf(own)).toBe(200)
    }))
})

describe("CORS", () => {
  it.scopedLive("is off unless configured: no preflight is answered", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(plain))
      const preflight = yield* rawRequest(server.url, {
        method: "OPTIONS",
        path: "/api/runs",
        headers: { origin: "http://ui.example", "access-control-request-method": "POST" }
      })
      expect(statusOf(preflight)).toBe(403)
      expect(headerOf(preflight, "access-control-allow-origin")).toBeUndefined()
      expect(preflight._tag === "response" ? preflight.text : "").toContain("server.cors.origins")
    }))

  it.scopedLive("answers preflights and marks responses readable for configured origins only", () =>
    Effect.gen(function*() {
      const { auth, server } = yield* configuredServer
      const preflight = (origin: string) =>
        rawRequest(server.url, {
          method: "OPTIONS",
          path: "/api/runs",
          headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "content-type, idempotency-key" }
        })
      const allowed = yield* preflight("http://ui.example")
      expect(statusOf(allowed)).toBe(204)
      expect(headerOf(allowed, "access-control-allow-origin")).toBe("http://ui.example")
      expect(headerOf(allowed, "access-control-allow-methods")).toBe("POST")
      expect(headerOf(allowed, "access-control-allow-headers")).toBe("content-type, idempotency-key")
      // Allowed to post, but not a CORS origin: no preflight for it.
      expect(statusOf(yield* preflight("http://app.example"))).not.toBe(204)
      expect(statusOf(yield* preflight("http://evil.example"))).toBe(403)
      const read = yield* rawRequest(server.url, { path: "/api/runs", headers: { ...auth, origin: "http://ui.example", "sec-fetch-site": "cross-site" } })
      expect(statusOf(read)).toBe(200)
      expect(headerOf(read, "access-control-allow-origin")).toBe("http://ui.example")
      const notCors = yield* rawRequest(server.url, { path: "/api/runs", headers: { ...auth, origin: "http://app.example" } })
      expect(headerOf(notCors, "access-control-allow-origin")).toBeUndefined()
      // A run's event stream is written by its handler, not by the platform: the same headers.
      const created = yield* http(`${server.url}/api/runs`, { method: "POST", headers: { ...json, ...auth }, body: runBody })
      const stream = yield* rawRequest(server.url, {
        path: `/api/runs/${runIdOf(created.json)}/events`,
        headers: { ...auth, accept: "text/event-stream", origin: "http://ui.example", "sec-fetch-site": "cross-site" }
      })
      expect([statusOf(stream), headerOf(stream, "content-type")]).toEqual([200, "text/event-stream"])
      expect(headerOf(stream, "access-control-allow-origin")).toBe("http://ui.example")
    }))
})

describe("security headers", () => {
  it.scopedLive("every answer carries them: the inspector, the API, its errors and the edge's refusals", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(plain))
      const port = portOf(server.url)
      const answers = {
        inspector: yield* rawRequest(server.url, { path: "/" }),
        script: yield* rawRequest(server.url, { path: "/assets/inspector.js" }),
        api: yield* rawRequest(server.url, { path: "/api/runs" }),
        notFound: yield* rawRequest(server.url, { path: "/api/nothing-here" }),
        badRequest: yield* rawRequest(server.url, { method: "POST", path: "/api/runs", headers: json, body: "{}" }),
        refused: yield* rawRequest(server.url, { path: "/api/runs", headers: { host: `evil.example:${port}` } }),
        runStream: yield* rawRequest(server.url, {
          path: `/api/runs/${runIdOf((yield* http(`${server.url}/api/runs`, { method: "POST", headers: json, body: runBody })).json)}/events`,
          headers: { accept: "text/event-stream" }
        })
      }
      expect(Object.values(answers).map(statusOf)).toEqual([200, 200, 200, 404, 400, 403, 200])
      expect(answers.runStream._tag === "response" ? answers.runStream.text : "").toContain("event: run.completed")
      for (const [name, answer] of Object.entries(answers)) {
        const csp = String(headerOf(answer, "content-security-policy"))
        expect([name, csp]).toEqual([name, expect.stringContaining("script-src 'self'")])
        expect(csp).not.toContain("unsafe-eval")
        expect(csp).not.toMatch(/script-src[^;]*unsafe-inline/)
        expect(csp).toContain("frame-ancestors 'none'")
        expect(headerOf(answer, "x-content-type-options")).toBe("nosniff")
        expect(headerOf(answer, "referrer-policy")).toBe("no-referrer")
        expect(headerOf(answer, "x-frame-options")).toBe("DENY")
      }
      // The CSP forbids inline script, so the page must have none: every script is a file.
      const page = answers.inspector._tag === "response" ? answers.inspector.text : ""
      const scripts = [...page.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)]
      expect(scripts.length).toBeGreaterThan(0)
      for (const [, attributes, body] of scripts) {
        expect(attributes).toMatch(/\bsrc="\/assets\//)
        expect(body?.trim()).toBe("")
      }
      expect(page).not.toMatch(/\son[a-z]+=/i)
    }))
})
