/**
 * The checking process `foundry dev` keeps: one process for every check of a session, each check
 * of the project as it is when asked (a module found once its file exists, though the file that
 * imports it did not change) and as tsc would have said, an interrupted check's answer never taken
 * for the next one's, and a process that dies answering for the check it was making, the next check
 * starting another.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { typeCheck } from "../../src/compiler/typeCheck.js"
import { typeCheckServer, type TypeChecks } from "../../src/compiler/typeCheckServer.js"
import { writeGenerated } from "../../src/router/codegen.js"
import { discoverAt } from "../router/support.js"
import { checkerOf, checkersOf, cpuTicksOf } from "../support/checkProcesses.js"
import { agentFile, tempProject } from "../support/tempProject.js"

// The module it imports first: tsc reads it right after this file, before anything "foundry" imports.
const wordsImported = `import { words } from "../lib/words.js"
${agentFile()}
export const first: string = words[0] ?? ""
`

const words = (type: string) => `export const words: ReadonlyArray<${type}> = []\n`

/** Generates `.foundry/` for the project at `root` and checks it with `checks`. */
const checkAt = (root: string, checks: TypeChecks) =>
  Effect.gen(function*() {
    const table = yield* discoverAt(root)
    yield* writeGenerated(table)
    return yield* checks.check(table.configFile)
  }).pipe(Effect.provide(NodeContext.layer))

/**
 * Waits until process `pid` has used `ticks` of CPU (Linux counts 100 a second): a checking process
 * that has, has loaded TypeScript (about 0.35 s) and begun its check, whose first reads are the
 * configuration and the project's own files, before the seconds it spends on the declarations
 * they import.
 */
const busyFor = (pid: number, ticks: number) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 3000; attempt++) {
      if (cpuTicksOf(pid) >= ticks) return
      yield* Effect.sleep("10 millis")
    }
    return yield* Effect.die(new Error(`the checking process did not use ${ticks} ticks of CPU in 30 s`))
  })

describe("the checking process foundry dev keeps", () => {
  it.scopedLive("makes every check of the session, each of the project as it is: a module is found once its file exists", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "agents/reader.ts": wordsImported })
      const checks = yield* typeCheckServer(root)

      const missing = yield* checkAt(root, checks)
      expect(missing.ok).toBe(false)
      expect(missing.diagnostics.map((d) => `${d.file} ${d.code}`)).toEqual(["agents/reader.ts TS2307"])
      const checker = yield* checkerOf(root)

      // The importing file is the same; the module it names now exists.
      mkdirSync(join(root, "lib"))
      writeFileSync(join(root, "lib/words.ts"), words("string"))
      const found = yield* checkAt(root, checks)
      expect([found.ok, found.reused, found.output]).toEqual([true, false, ""])

      // A file parsed before, changed: parsed again.
      writeFileSync(join(root, "lib/words.ts"), words("number"))
      const changed = yield* checkAt(root, checks)
      expect(changed.diagnostics.map((d) => `${d.file} ${d.code}`)).toEqual(["agents/reader.ts TS2322"])
      writeFileSync(join(root, "lib/words.ts"), words("string"))
      expect((yield* checkAt(root, checks)).ok).toBe(true)

      expect(checkersOf(root)).toEqual([checker])
    }))

  it.scopedLive("says what tsc says of the same project: of a file that does not parse, only that", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/reader.ts": wordsImported,
        "lib/words.ts": "export const words: ReadonlyArray<string> = [\n",
        "lib/count.ts": `export const count: number = "three"\n`
      })
      const served = yield* checkAt(root, yield* typeCheckServer(root))
      const alone = yield* checkAt(root, { check: (configFile) => typeCheck(root, configFile) })
      expect(served.diagnostics.map((d) => `${d.file} ${d.code}`)).toEqual(["lib/words.ts TS1005"])
      expect(served.output).toBe(alone.output)
    }))

  it.scopedLive("never answers a check with the answer to one interrupted before it", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "agents/reader.ts": wordsImported, "lib/words.ts": words("number") })
      const checks = yield* typeCheckServer(root)
      const broken = yield* Effect.fork(checkAt(root, checks))
      yield* busyFor(yield* checkerOf(root), 60)
      yield* Fiber.interrupt(broken)

      // Asked while the process still makes the interrupted check, which read the file before this.
      writeFileSync(join(root, "lib/words.ts"), words("string"))
      const fixed = yield* checkAt(root, checks)
      expect([fixed.ok, fixed.output]).toEqual([true, ""])
    }))

  it.scopedLive("a process killed while it checks answers that the check did not finish, and the next check starts another", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "agents/reader.ts": wordsImported, "lib/words.ts": words("string") })
      const checks = yield* typeCheckServer(root)
      const killed = yield* Effect.fork(checkAt(root, checks))
      const checker = yield* checkerOf(root)
      process.kill(checker, "SIGKILL")

      const answer = yield* Fiber.join(killed)
      expect(answer.ok).toBe(false)
      expect(answer.output).toMatch(/^tsc did not finish: it was killed by SIGKILL/)

      const again = yield* checkAt(root, checks)
      expect([again.ok, again.output]).toEqual([true, ""])
      expect(yield* checkerOf(root)).not.toBe(checker)
    }))

  it.scopedLive("ends with the scope that holds it", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "agents/reader.ts": wordsImported, "lib/words.ts": words("string") })
      yield* Effect.scoped(Effect.gen(function*() {
        const checks = yield* typeCheckServer(root)
        expect((yield* checkAt(root, checks)).ok).toBe(true)
        yield* checkerOf(root)
      }))
      for (let attempt = 0; attempt < 100 && checkersOf(root).length > 0; attempt++) yield* Effect.sleep("20 millis")
      expect(checkersOf(root)).toEqual([])
    }))
})
