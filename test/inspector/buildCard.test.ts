/**
 * The overview's build card under `foundry dev`: while a build goes it says so and for how long,
 * with what the build waits for; once it ends, the last build's result again.
 */
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { skipBrowser } from "../support/browser.js"
import { devOverview } from "../support/devInBrowser.js"
import { answeringAgentFile, answerToolFile, tempProject } from "../support/tempProject.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const dbService = `import { Context } from "effect"
export class Db extends Context.Tag("Db")<Db, { readonly answer: string }>() {}
`

/** A config whose one layer is `dbLayer` (an expression). */
const config = (dbLayer: string) => `import { Effect, Layer } from "effect"
import { defineConfig } from "foundry"
import { Db } from "./lib/db.js"
export default defineConfig({ layers: [${dbLayer}] })
`

describe.skipIf(skipBrowser)("the overview's build card", () => {
  it.scopedLive("says Building… with its seconds and what it waits for while a build goes, then the build that serves", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "lib/db.ts": dbService,
        "foundry.config.ts": config(`Layer.succeed(Db, { answer: "one" })`),
        "agents/helper/agent.ts": answeringAgentFile,
        "agents/helper/tools/answer.tool.ts": answerToolFile(`"sound"`)
      })
      const { card } = yield* devOverview(root)
      yield* promise(() => card.locator("text=/build 1 since/").waitFor())
      expect(yield* promise(() => card.getByTestId("build-going").count())).toBe(0)

      // A layer that never answers: the build goes on, and the card counts its seconds (polled, not reloaded).
      writeFileSync(join(root, "foundry.config.ts"), config(`Layer.scoped(Db, Effect.acquireRelease(Effect.never, () => Effect.void))`))
      const going = card.getByTestId("build-going")
      yield* promise(() => going.locator("text=/Building… \\(\\d+ s\\) build 2/").waitFor({ timeout: 20_000 }))
      // Its seconds count up between the polls of the idle overview (every 15 s).
      const secondsShown = Effect.map(promise(() => going.textContent()), (text) => Number(/\((\d+) s\)/.exec(text ?? "")?.[1]))
      const first = yield* secondsShown
      let later = first
      for (let poll = 0; poll < 25 && later < first + 2; poll++) {
        yield* Effect.sleep("200 millis")
        later = yield* secondsShown
      }
      expect(later).toBeGreaterThanOrEqual(first + 2)
      expect(yield* promise(() => going.textContent())).toContain("waiting for layers[0] of foundry.config.ts to build")
      // The last build's result still shows below.
      expect(yield* promise(() => card.textContent())).toMatch(/build 1 since/)

      writeFileSync(join(root, "foundry.config.ts"), config(`Layer.succeed(Db, { answer: "three" })`))
      yield* promise(() => card.locator("text=/build 3 since/").waitFor({ timeout: 20_000 }))
      expect(yield* promise(() => card.getByTestId("build-going").count())).toBe(0)
    }))
})
