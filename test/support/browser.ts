/**
 * Chromium for inspector tests, driven by playwright-core. Tests run when /usr/bin/chromium is
 * there; otherwise they are skipped with a printed reason, unless FOUNDRY_REQUIRE_BROWSER=1
 * (CI), which turns a missing browser into a failure.
 */
import { existsSync } from "node:fs"
import { Effect } from "effect"
import { type Browser, chromium, type Page } from "playwright-core"

/** Where Debian's Chromium lives. */
export const chromiumPath = "/usr/bin/chromium"

/** Whether browser tests must run. */
export const browserRequired: boolean = process.env["FOUNDRY_REQUIRE_BROWSER"] === "1"

/** Whether to skip browser tests (no Chromium, and not required). */
export const skipBrowser: boolean = !existsSync(chromiumPath) && !browserRequired

if (skipBrowser) {
  console.warn(`Skipping browser tests: ${chromiumPath} is missing (install Debian's chromium package; CI requires it)`)
}

/** A browser page for the test's scope. */
export const browserPage = Effect.gen(function*() {
  if (!existsSync(chromiumPath)) {
    return yield* Effect.die(new Error(`FOUNDRY_REQUIRE_BROWSER=1 but ${chromiumPath} is missing: apt-get install chromium`))
  }
  const browser: Browser = yield* Effect.acquireRelease(
    Effect.promise(() =>
      chromium.launch({
        executablePath: chromiumPath,
        args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
      })
    ),
    (b) => Effect.promise(() => b.close())
  )
  const page: Page = yield* Effect.promise(() => browser.newPage({ viewport: { width: 1280, height: 900 } }))
  return page
})
