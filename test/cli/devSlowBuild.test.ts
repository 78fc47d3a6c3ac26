/**
 * `foundry dev` with a build that does not finish (a layer that never answers): the terminal says
 * what the build waits for, what served before keeps serving, and a newer save gives the build up.
 */
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { freePort, startCli } from "../support/cli.js"
import { http } from "../support/server.js"
import { answerOf, dbTool } from "./dbProject.js"
import { answeringAgentFile, tempProject } from "../support/tempProject.js"

const toolPath = "agents/helper/tools/answer.tool.ts"

const dbService = `import { Context } from "effect"
export class Db extends Context.Tag("Db")<Db, { readonly answer: string }>() {}
export class Mail extends Context.Tag("Mail")<Mail, { readonly sent: number }>() {}
`

/** A config whose `Db` layer is `dbLayer` (an expression), after a `Mail` layer that builds at once. */
const config = (dbLayer: string) => `import { Effect, Layer } from "effect"
import { defineConfig } from "foundry"
import { Db, Mail } from "./lib/db.js"
export default defineConfig({ layers: [Layer.succeed(Mail, { sent: 0 }), ${dbLayer}] })
`

const answering = (answer: string) => `Layer.succeed(Db, { answer: ${JSON.stringify(answer)} })`

/** A database whose connection never answers: acquired uninterruptibly, as connections are. */
const neverAnswering = `Layer.scoped(Db, Effect.acquireRelease(Effect.never, () => Effect.void))`

describe("foundry dev with a build that does not finish", () => {
  it.scopedLive("says which layer it waits for, keeps serving the build before, and a newer save gives it up", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "lib/db.ts": dbService,
        "foundry.config.ts": config(answering("from build 1")),
        "agents/helper/agent.ts": answeringAgentFile,
        [toolPath]: dbTool
      })
      const port = yield* freePort
      const dev = yield* startCli(["dev", root, "--port", String(port)])
      yield* dev.waitFor(/listening on/)
      const url = `http://127.0.0.1:${port}`
      expect(yield* answerOf(url)).toBe("the tool said: from build 1")

      let mark = dev.output().length
      writeFileSync(join(root, "foundry.config.ts"), config(neverAnswering))
      const notice = yield* dev.waitFor(/still building build \d+ \(5 s\): [^\n]*/, mark)
      expect(notice).toContain(
        "waiting for layers[1] of foundry.config.ts to build (1 of 2 built; not provided yet: Db, which tools require)"
      )
      expect(notice).toContain("a save starts the build over")
      // Meanwhile the build before serves, and GET /api/build says a build goes, since when and what it waits for.
      expect(yield* answerOf(url)).toBe("the tool said: from build 1")
      const going = (yield* http(`${url}/api/build`)).json as {
        generation: number
        building: boolean
        inProgress: { generation: number; since: number; waitingFor: string | null } | null
      }
      expect(going).toMatchObject({ generation: 1, building: true, inProgress: { generation: 2 } })
      expect(Date.now() - (going.inProgress?.since ?? 0)).toBeGreaterThanOrEqual(5_000)
      expect(going.inProgress?.waitingFor).toContain("layers[1] of foundry.config.ts to build")
      expect(dev.output().slice(mark)).not.toMatch(/reloaded|Reload failed|crashed/)

      mark = dev.output().length
      writeFileSync(join(root, "foundry.config.ts"), config(answering("from the newest save")))
      yield* dev.waitFor(/reloaded \(build \d+\)/, mark)
      expect(yield* answerOf(url)).toBe("the tool said: from the newest save")
      expect((yield* http(`${url}/api/build`)).json).toMatchObject({ generation: 3, problems: [], building: false, inProgress: null })
    }))

  it.scopedLive("at start, says which layer it waits for", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "lib/db.ts": dbService,
        "foundry.config.ts": config("Layer.effect(Db, Effect.never)"),
        "agents/helper/agent.ts": answeringAgentFile,
        [toolPath]: dbTool
      })
      const dev = yield* startCli(["dev", root, "--port", String(yield* freePort)])
      const notice = yield* dev.waitFor(/still building \(5 s\): [^\n]*/)
      expect(notice).toContain(
        "waiting for layers[1] of foundry.config.ts to build (1 of 2 built; not provided yet: Db, which tools require)"
      )
      expect(dev.output()).not.toMatch(/listening on/)
    }))
})

describe("foundry dev with a first build that does not finish", () => {
  it.scopedLive("a save that fixes a route module stuck at its top level gives up the first build, and the server comes up", () =>
    Effect.gen(function*() {
      const stuckTool = `await new Promise(() => {})\n${dbTool}`
      const root = yield* tempProject({
        "lib/db.ts": dbService,
        "foundry.config.ts": config(answering("after the fix")),
        "agents/helper/agent.ts": answeringAgentFile,
        [toolPath]: stuckTool
      })
      const port = yield* freePort
      const dev = yield* startCli(["dev", root, "--port", String(port)])
      const notice = yield* dev.waitFor(/still building \(5 s\): [^\n]*/)
      expect(notice).toContain("a save starts the build over")
      expect(dev.output()).not.toMatch(/listening on/)

      writeFileSync(join(root, toolPath), dbTool)
      yield* dev.waitFor(/building again \(build 2\)/)
      yield* dev.waitFor(/listening on/)
      const url = `http://127.0.0.1:${port}`
      expect(yield* answerOf(url)).toBe("the tool said: after the fix")
      const build = (yield* http(`${url}/api/build`)).json as { generation: number; problems: ReadonlyArray<unknown> }
      // The build after the first, at least: a save seen as two bursts of events (a slow machine) gives up build 2 too.
      expect(build.problems).toEqual([])
      expect(build.generation).toBeGreaterThanOrEqual(2)
    }))

  it.scopedLive("a save that fixes a layer whose acquisition never ends gives up the first build, and the server comes up", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "lib/db.ts": dbService,
        "foundry.config.ts": config(neverAnswering),
        "agents/helper/agent.ts": answeringAgentFile,
        [toolPath]: dbTool
      })
      const port = yield* freePort
      const dev = yield* startCli(["dev", root, "--port", String(port)])
      yield* dev.waitFor(/still building \(5 s\): waiting for layers\[1\] of foundry.config.ts/)

      writeFileSync(join(root, "foundry.config.ts"), config(answering("from the fixed layer")))
      yield* dev.waitFor(/listening on/)
      expect(yield* answerOf(`http://127.0.0.1:${port}`)).toBe("the tool said: from the fixed layer")
    }))
})
