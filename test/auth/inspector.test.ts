import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { browserPage, skipBrowser } from "../support/browser.js"
import { http, startServer } from "../support/server.js"
import { authProject, bearer, issue } from "./support.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** A server that needs tokens, a `read` token named "dashboard", a run started with a `run` token, and a browser page. */
const setup = Effect.gen(function*() {
  const server = yield* startServer(yield* authProject())
  const read = yield* issue(server.storeFile, "read", "dashboard")
  const run = yield* issue(server.storeFile, "run")
  const submitted = yield* http(`${server.url}/api/runs`, { body: { agent: "echo", message: "hello" }, headers: bearer(run.token) })
  const started = submitted.json as { runId: string; conversationId: string }
  return { server, read, started, page: yield* browserPage }
})

/** Signs in from the page's sign-in dialog with `token`. */
const signIn = (page: Page, token: string) =>
  Effect.gen(function*() {
    yield* promise(() => page.fill("dialog#sign-in input[name=token]", token))
    yield* promise(() => page.click("dialog#sign-in button[type=submit]"))
    yield* promise(() => page.waitForSelector("dialog#sign-in", { state: "detached" }))
  })

describe.skipIf(skipBrowser)("the inspector on a server that needs tokens, in Chromium", () => {
  it.scopedLive("asks for a token, refuses a wrong one, signs in with a right one and then shows the runs live", () =>
    Effect.gen(function*() {
      const { page, read, server, started: { runId } } = yield* setup

      yield* promise(() => page.goto(`${server.url}/runs`))
      yield* promise(() => page.waitForSelector("dialog#sign-in[open]"))
      yield* promise(() => page.fill("dialog#sign-in input[name=token]", "fdy_wrong"))
      yield* promise(() => page.click("dialog#sign-in button[type=submit]"))
      yield* promise(() => page.waitForSelector("dialog#sign-in [role=alert]:not(.hidden)"))
      expect(yield* promise(() => page.textContent("dialog#sign-in [role=alert]"))).toContain("unknown or revoked")

      yield* signIn(page, read.token)
      // The page drew from the API with the cookie, and the live stream (an EventSource) is open.
      yield* promise(() => page.waitForSelector(`a[href="/runs/${runId}"]`))
      yield* promise(() => page.waitForSelector("#live.on"))
      expect(yield* promise(() => page.textContent("#session"))).toContain("dashboard (read)")
      // The token lives in an HttpOnly cookie: no script of the page can read it.
      expect(String(yield* promise(() => page.evaluate("document.cookie")))).not.toContain("fdy_")
      const cookies = yield* promise(() => page.context().cookies())
      // The cookie holds a session of its own, never the token, under a name of this server's port.
      const session = cookies.find((c) => c.name === `foundry_session_${new URL(server.url).port}`)
      expect(session).toMatchObject({ httpOnly: true, sameSite: "Strict" })
      expect(session?.value).not.toContain(read.token.slice(21))

      // Signing out drops the session: the next load asks again.
      yield* promise(() => page.click("header button.linkish"))
      yield* promise(() => page.waitForSelector("dialog#sign-in[open]"))
    }))
})

describe.skipIf(skipBrowser)("the inspector with a token that may only read, in Chromium", () => {
  it.scopedLive("says why a message was not sent, and keeps it to send again", () =>
    Effect.gen(function*() {
      const { page, read, server, started: { conversationId } } = yield* setup
      yield* promise(() => page.goto(`${server.url}/conversations`))
      yield* signIn(page, read.token)
      yield* promise(() => page.waitForSelector("select[name=agent] option[value=echo]", { state: "attached" }))

      // A new conversation.
      yield* promise(() => page.fill("input[name=message]", "a new one"))
      yield* promise(() => page.click("form.composer button[type=submit]"))
      yield* promise(() => page.waitForSelector("[data-testid=send-problem]:has-text('scope')"))
      expect(yield* promise(() => page.textContent("[data-testid=send-problem]"))).toContain(`needs a token with scope "run"`)
      expect(page.url()).toBe(`${server.url}/conversations`)

      // A message in a conversation: it is not shown as sent, and waits in the box.
      yield* promise(() => page.goto(`${server.url}/conversations/${conversationId}`))
      yield* promise(() => page.waitForSelector("[data-role=user]"))
      yield* promise(() => page.fill("input[name=message]", "once more"))
      yield* promise(() => page.click("form.composer button[type=submit]"))
      yield* promise(() => page.waitForSelector("[data-testid=send-problem]:has-text('scope')"))
      expect(yield* promise(() => page.inputValue("input[name=message]"))).toBe("once more")
      expect(yield* promise(() => page.locator(".bubble.pending").count())).toBe(0)
    }))
})

describe.skipIf(skipBrowser)("the inspector over a token's rate limit, in Chromium", () => {
  it.scopedLive("says the server refused its reads, backs off, then reads again", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* authProject(`{ required: true, rateLimit: { requests: 6, per: "3 seconds" } }`))
      const read = yield* issue(server.storeFile, "read", "dashboard")
      const page = yield* browserPage
      const errors: Array<string> = []
      page.on("pageerror", (error) => errors.push(error.message))
      yield* promise(() => page.goto(`${server.url}/`))
      yield* signIn(page, read.token)
      // The overview reads more things at once than the limit allows: some are refused, and the page says so.
      const problem = page.locator("[data-testid=page-problem]:has-text('requests per')").first()
      yield* promise(() => problem.waitFor())
      expect(yield* promise(() => problem.textContent())).toMatch(/trying again in \d+ s/)
      // Once the limit allows, the page reads again by itself and the line goes.
      yield* promise(() => page.locator("[data-testid=page-problem]:not(:empty)").first().waitFor({ state: "detached", timeout: 20_000 }))
      yield* promise(() => page.waitForSelector("[data-testid=build] >> text=/build \\d+ since/"))
      expect(errors).toEqual([])
    }))
})
