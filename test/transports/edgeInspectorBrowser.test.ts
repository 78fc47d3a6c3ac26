/**
 * The edge in a real browser: the inspector works under its content security policy (no
 * violation, the waterfall's bars sized, live updates on), its own requests pass the Origin check,
 * and a page reached through DNS rebinding gets neither the inspector nor the API.
 */
import { tmpdir } from "node:os"
import { join } from "node:path"
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { chromium } from "playwright-core"
import { browserPage, chromiumPath, skipBrowser } from "../support/browser.js"
import { durableProject, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

describe.skipIf(skipBrowser)("the edge in Chromium", () => {
  it.scopedLive("the inspector runs under its CSP without a violation, and its own posts pass the Origin check", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(durableProject(join(tmpdir(), `foundry-edge-${randomUUID()}.log`)))
      const server = yield* startServer(root, { model: plannedModel })
      const page = yield* browserPage
      const violations: Array<string> = []
      page.on("console", (message) => {
        if (message.type() === "error" && message.text().includes("Content Security Policy")) violations.push(message.text())
      })
      yield* promise(() => page.exposeFunction("reportViolation", (text: string) => void violations.push(text)))
      // Browser code, as text: the tests are type-checked without the DOM's types.
      yield* promise(() =>
        page.addInitScript({
          content: `document.addEventListener("securitypolicyviolation", (event) => reportViolation(event.violatedDirective + ": " + event.blockedURI))`
        })
      )
      const created = yield* http(`${server.url}/api/runs`, {
        body: { agent: "worker", message: plan({ calls: [{ name: "record", arguments: { line: "csp" } }] }) }
      })
      const { runId } = created.json as { runId: string }
      yield* waitForRun(server.url, runId)
      const response = yield* promise(() => page.goto(`${server.url}/runs/${runId}`))
      expect(response?.headers()["content-security-policy"]).toContain("script-src 'self'")
      yield* promise(() => page.waitForSelector("[data-testid=waterfall] .span.tool .bar"))
      yield* promise(() => page.waitForSelector("#live.on"))
      // The bars are sized by style attributes, which the policy lets through.
      const width = yield* promise(() => page.locator("[data-testid=waterfall] .span.tool .bar").first().evaluate((bar) => bar.getBoundingClientRect().width))
      expect(width).toBeGreaterThan(0)
      // The page's own state-changing request carries its Origin, and passes.
      const status = yield* promise(() =>
        page.evaluate(() =>
          fetch("/api/runs", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent: "worker", message: "from the page" }) })
            .then((r) => r.status)
        )
      )
      expect(status).toBe(202)
      expect(violations).toEqual([])
    }))

  it.scopedLive("DNS rebinding: a name the attacker re-points at loopback gets 403, not the inspector or the API", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(durableProject(join(tmpdir(), `foundry-edge-${randomUUID()}.log`)))
      const server = yield* startServer(root, { model: plannedModel })
      const port = new URL(server.url).port
      // The rebinding, done by the browser's resolver: the attacker's name now points at 127.0.0.1.
      const browser = yield* Effect.acquireRelease(
        promise(() =>
          chromium.launch({
            executablePath: chromiumPath,
            args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--host-resolver-rules=MAP rebind.test 127.0.0.1"]
          })
        ),
        (b) => promise(() => b.close())
      )
      const page = yield* promise(() => browser.newPage())
      const response = yield* promise(() => page.goto(`http://rebind.test:${port}/`))
      expect(response?.status()).toBe(403)
      expect(yield* promise(() => response!.json())).toEqual({
        _tag: "HostNotAllowed",
        message: expect.stringContaining("server.allowedHosts")
      })
      // To the browser this is the page's own origin: only the Host check stands in the way.
      const posted = yield* promise(() =>
        page.evaluate(() =>
          fetch("/api/runs", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent: "worker", message: "rebound" }) })
            .then((r) => r.status)
        )
      )
      expect(posted).toBe(403)
      expect((yield* http(`${server.url}/api/runs`)).json).toEqual([])
    }))
})
