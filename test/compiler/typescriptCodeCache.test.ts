/**
 * A type check compiles TypeScript with V8's code cache for it, kept under the user's cache folder
 * (`$XDG_CACHE_HOME/foundry`) once a check has run: a cache that is not V8's (truncated, from a
 * disk that lost it) is compiled around and made again, and the check's verdict is the same, what
 * a killed writer left beside it going then; with no cache folder to tell (a relative one, no
 * home), none is kept.
 */
import { randomUUID } from "node:crypto"
import { mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { typeCheck } from "../../src/compiler/typeCheck.js"
import { writeGenerated } from "../../src/router/codegen.js"
import { discoverAt } from "../router/support.js"
import { withEnv } from "../support/environment.js"
import { agentFile, tempProject } from "../support/tempProject.js"

/** `XDG_CACHE_HOME` set to a new folder for as long as the scope is open. */
const cacheHome = Effect.gen(function*() {
  const folder = yield* Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "foundry-test-cache-"))),
    (folder) => Effect.sync(() => rmSync(folder, { recursive: true, force: true }))
  )
  yield* withEnv({ XDG_CACHE_HOME: folder })
  return folder
})

/** Generates `.foundry/` for the project at `root` and type-checks it. */
const checkAt = (root: string) =>
  Effect.gen(function*() {
    const table = yield* discoverAt(root)
    yield* writeGenerated(table)
    return yield* typeCheck(root, table.configFile)
  }).pipe(Effect.provide(NodeContext.layer))

const failing = `export const count: number = "three"\n`

describe("TypeScript's code cache", () => {
  it.scopedLive("is kept after a check, and one that is not V8's is made again, the verdicts the same", () =>
    Effect.gen(function*() {
      const folder = yield* cacheHome
      const root = yield* tempProject({ "agents/helper.ts": agentFile(), "lib/count.ts": failing })
      const first = yield* checkAt(root)
      expect(first.diagnostics.map((d) => `${d.file} ${d.code}`)).toEqual(["lib/count.ts TS2322"])
      const caches = readdirSync(join(folder, "foundry"))
      expect(caches).toHaveLength(1)
      const cache = join(folder, "foundry", caches[0] ?? "")
      const made = readFileSync(cache)
      expect(made.length).toBeGreaterThan(1_000_000)

      // Cut short, as a full disk or a crash leaves it.
      writeFileSync(cache, made.subarray(0, 4096))
      // Beside it, what a writer killed between its write and its rename left an hour ago, and what
      // one at work now is writing.
      const leftover = `${cache}.${randomUUID()}.tmp`
      const atWork = `${cache}.${randomUUID()}.tmp`
      writeFileSync(leftover, made.subarray(0, 4096))
      const anHourAgo = (Date.now() - 3_600_000) / 1000
      utimesSync(leftover, anHourAgo, anHourAgo)
      writeFileSync(atWork, made.subarray(0, 4096))
      const second = yield* checkAt(root)
      expect([second.ok, second.reused, second.output]).toEqual([first.ok, first.reused, first.output])
      expect(readFileSync(cache).length).toBeGreaterThan(1_000_000)
      expect(readdirSync(join(folder, "foundry")).sort()).toEqual([...caches, basename(atWork)].sort())
    }))

  it.scopedLive("is not kept where no cache folder can be told: a relative XDG_CACHE_HOME and no home", () =>
    Effect.gen(function*() {
      yield* withEnv({ XDG_CACHE_HOME: "cache", HOME: "" })
      const root = yield* tempProject({ "agents/helper.ts": agentFile(), "lib/count.ts": failing })
      const checked = yield* checkAt(root)
      expect(checked.diagnostics.map((d) => `${d.file} ${d.code}`)).toEqual(["lib/count.ts TS2322"])
      // The check runs in the project's folder: a relative cache folder would be made there.
      expect(readdirSync(root).filter((entry) => entry === "cache" || entry === ".cache")).toEqual([])
    }))
})
