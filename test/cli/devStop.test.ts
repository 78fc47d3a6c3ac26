/**
 * `foundry dev` stopped (Ctrl-C, or a signal from its supervisor) releases what the build it
 * serves acquired for its config's layers, as each reload releases the build it replaces.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { freePort, startCli } from "../support/cli.js"
import { answeringAgentFile, tempProject } from "../support/tempProject.js"
import { answerOf, dbTool } from "./dbProject.js"

const dbService = `import { Context } from "effect"
export class Db extends Context.Tag("Db")<Db, { readonly answer: string }>() {}
`

/** A config whose `Db` layer, labelled `label`, appends "released <label>" to `log` when released. */
const config = (log: string, label: string) => `import { appendFileSync } from "node:fs"
import { Effect, Layer } from "effect"
import { defineConfig } from "foundry"
import { Db } from "./lib/db.js"
export default defineConfig({
  layers: [Layer.scoped(Db, Effect.acquireRelease(
    Effect.succeed({ answer: ${JSON.stringify(label)} }),
    () => Effect.sync(() => appendFileSync(${JSON.stringify(log)}, "released ${label}\\n"))
  ))]
})
`

const released = (log: string): ReadonlyArray<string> =>
  existsSync(log) ? readFileSync(log, "utf8").split("\n").filter((line) => line !== "") : []

describe("foundry dev stopped", () => {
  it.scopedLive("releases the layers of the build it serves, as a reload releases the build before", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "lib/db.ts": dbService, "agents/helper/agent.ts": answeringAgentFile, "agents/helper/tools/answer.tool.ts": dbTool })
      const log = join(root, "released.log")
      writeFileSync(join(root, "foundry.config.ts"), config(log, "first"))
      const port = yield* freePort
      const dev = yield* startCli(["dev", root, "--port", String(port)])
      yield* dev.waitFor(/listening on/)
      const url = `http://127.0.0.1:${port}`
      expect(yield* answerOf(url)).toBe("the tool said: first")

      const mark = dev.output().length
      writeFileSync(join(root, "foundry.config.ts"), config(log, "second"))
      yield* dev.waitFor(/reloaded \(build \d+\)/, mark)
      expect(yield* answerOf(url)).toBe("the tool said: second")
      expect(released(log)).toEqual(["released first"])

      const exited = yield* Effect.async<number | null>((resume) => {
        dev.child.once("exit", (code) => resume(Effect.succeed(code)))
        dev.child.kill("SIGINT")
      })
      expect(exited).toBe(0)
      expect(released(log)).toEqual(["released first", "released second"])
    }))
})
