/**
 * `foundry dev` on a project, with Chromium on the inspector's overview: for inspector tests of
 * what the dev loop shows.
 */
import { Effect } from "effect"
import { browserPage } from "./browser.js"
import { freePort, startCli } from "./cli.js"

/** Starts `foundry dev` on `root`, waits until it listens, and opens the overview; the page's build card is `card`. */
export const devOverview = (root: string) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const dev = yield* startCli(["dev", root, "--port", String(port)])
    yield* dev.waitFor(/listening on/)
    const page = yield* browserPage
    const url = `http://127.0.0.1:${port}`
    yield* Effect.promise(() => page.goto(`${url}/`))
    return { dev, page, url, card: page.getByTestId("build") }
  })
