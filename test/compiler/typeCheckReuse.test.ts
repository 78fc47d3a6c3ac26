/**
 * A type check answers without running tsc when nothing the last check that passed asked the file
 * system about has changed; anything that has runs tsc again, and it finds what changed: a
 * package's declarations though npm keeps their time, which declarations a package's package.json
 * names, a new file in a checked folder or behind a symlinked one, a package.json that says what
 * module kind the project's files are; a record of another TypeScript, or one half written. The
 * same for a check made by `tsc` in a process of its own and by the checking process `foundry dev`
 * keeps, which parses a file again only when its text or its parse options changed.
 */
import { mkdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import type { FileSystem } from "@effect/platform"
import type { PlatformError } from "@effect/platform/Error"
import { Effect, type Scope } from "effect"
import { typeCheck, type TypeCheckResult } from "../../src/compiler/typeCheck.js"
import { typeCheckServer } from "../../src/compiler/typeCheckServer.js"
import { writeGenerated } from "../../src/router/codegen.js"
import { discoverAt } from "../router/support.js"
import { agentFile, tempProject } from "../support/tempProject.js"

const shoutTool = `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
import { shout } from "shout"

export const here = import.meta.url

export default defineTool({
  description: "Shouts the text",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  run: ({ text }) => Effect.succeed(shout(text))
})
`

const shoutTypes = (parameter: string) => `export declare const shout: (text: ${parameter}) => string\n`

const project = {
  "agents/crier.ts": agentFile({ tools: ["shout"], imports: `import shout from "../tools/shout.tool.js"` }),
  "tools/shout.tool.ts": shoutTool,
  "node_modules/shout/package.json": JSON.stringify({ name: "shout", version: "1.0.0", type: "module", main: "./index.js", types: "./index.d.ts" }),
  "node_modules/shout/index.d.ts": shoutTypes("string"),
  "node_modules/shout/loud.d.ts": shoutTypes("number"),
  "node_modules/shout/index.js": "export const shout = (text) => text.toUpperCase()\n"
}

/** The project in a new folder, its package installed as npm installs: every file's time in 1985. */
const projectWithPackage = Effect.tap(tempProject(project), (root) =>
  Effect.sync(() => {
    const npmTime = new Date("1985-10-26T08:15:00Z")
    for (const file of ["package.json", "index.d.ts", "loud.d.ts", "index.js"]) utimesSync(join(root, "node_modules/shout", file), npmTime, npmTime)
  }))

/** A way to check the project at a root, made for it: each call a check of the project as it is then. */
type Checker = (root: string) => Effect.Effect<Check, never, Scope.Scope>
type Check = (configFile: string | undefined) => Effect.Effect<TypeCheckResult, PlatformError, FileSystem.FileSystem>

const checkers: ReadonlyArray<readonly [string, Checker]> = [
  ["tsc in a process of each check's own", (root) => Effect.succeed((configFile) => typeCheck(root, configFile))],
  ["the checking process foundry dev keeps", (root) => Effect.map(typeCheckServer(root), (checks) => checks.check)]
]

/** Generates `.foundry/` for the project at `root` and type-checks it. */
const checkAt = (root: string, check: Check) =>
  Effect.gen(function*() {
    const table = yield* discoverAt(root)
    yield* writeGenerated(table)
    return yield* check(table.configFile)
  }).pipe(Effect.provide(NodeContext.layer))

/** Writes `content` to `file`, keeping the time it had, as npm's installs leave every file's time. */
const rewriteKeepingTime = (file: string, content: string) => {
  const { atime, mtime } = statSync(file)
  writeFileSync(file, content)
  utimesSync(file, atime, mtime)
}

/** Whether a check passed and whether it ran tsc, then the files it blamed. */
const verdictOf = (result: TypeCheckResult) => ({ ok: result.ok, reused: result.reused, files: [...new Set(result.diagnostics.map((d) => d.file))] })

/** The verdict of checking the project at `root`. */
const verdict = (root: string, check: Check) => Effect.map(checkAt(root, check), verdictOf)

const passedAgain = { ok: true, reused: true, files: [] }

const failing = `export const count: number = "three"\n`

/** The check of the project at `root` with `file` written into it; removed, the check passes again without tsc. */
const checkedWhileThere = (root: string, check: Check, file: string, content: string) =>
  Effect.gen(function*() {
    writeFileSync(join(root, file), content)
    const result = yield* checkAt(root, check)
    rmSync(join(root, file))
    expect(yield* verdict(root, check)).toEqual(passedAgain)
    return result
  })

describe.each(checkers)("a type check that passed before, by %s", (_, checker) => {
  it.scopedLive("answers without tsc until a package it read changes, and again once that is undone", () =>
    Effect.gen(function*() {
      const root = yield* projectWithPackage
      const check = yield* checker(root)
      const first = yield* checkAt(root, check)
      expect(first.output).toBe("")
      expect([first.ok, first.reused]).toEqual([true, false])
      expect(yield* verdict(root, check)).toEqual(passedAgain)

      // A record of another TypeScript, or one that cannot be read, is no answer: tsc runs.
      const record = join(root, ".foundry/typecheck.json")
      const kept = readFileSync(record, "utf8")
      writeFileSync(record, kept.replace(/"typescript":"[^"]*"/, `"typescript":"5.0.0 1 1"`))
      expect(yield* verdict(root, check)).toEqual({ ok: true, reused: false, files: [] })
      writeFileSync(record, kept.slice(0, kept.length / 2))
      expect(yield* verdict(root, check)).toEqual({ ok: true, reused: false, files: [] })
      expect(yield* verdict(root, check)).toEqual(passedAgain)

      // The package's declarations changed under the same time and size, as an install leaves them.
      const declarations = join(root, "node_modules/shout/index.d.ts")
      rewriteKeepingTime(declarations, shoutTypes("number"))
      expect(yield* verdict(root, check)).toEqual({ ok: false, reused: false, files: ["tools/shout.tool.ts"] })
      // Put back, it is what passed: the failed check in between did not forget that.
      rewriteKeepingTime(declarations, shoutTypes("string"))
      expect(yield* verdict(root, check)).toEqual(passedAgain)

      // The package's package.json names other declarations, both files unchanged.
      const manifest = join(root, "node_modules/shout/package.json")
      rewriteKeepingTime(manifest, project["node_modules/shout/package.json"].replace("./index.d.ts", "./loud.d.ts"))
      expect(yield* verdict(root, check)).toEqual({ ok: false, reused: false, files: ["tools/shout.tool.ts"] })
      rewriteKeepingTime(manifest, project["node_modules/shout/package.json"])
      expect(yield* verdict(root, check)).toEqual(passedAgain)
    }))

  it.scopedLive("runs tsc for a new file in a checked folder, behind a symlinked folder too, and for a package.json there or the project's", () =>
    Effect.gen(function*() {
      const root = yield* projectWithPackage
      const check = yield* checker(root)
      mkdirSync(join(root, "shared"))
      writeFileSync(join(root, "shared/words.ts"), `export const words: ReadonlyArray<string> = ["a"]\n`)
      symlinkSync(join(root, "shared"), join(root, "tools/_shared"))
      expect(yield* verdict(root, check)).toMatchObject({ ok: true, reused: false })
      expect(yield* verdict(root, check)).toEqual(passedAgain)

      // A helper that fails, though nothing imports it yet; the same in a folder the checked one links to.
      const draft = yield* checkedWhileThere(root, check, "tools/_draft.ts", failing)
      expect(verdictOf(draft)).toEqual({ ok: false, reused: false, files: ["tools/_draft.ts"] })
      const linked = yield* checkedWhileThere(root, check, "shared/draft.ts", failing)
      expect(verdictOf(linked)).toEqual({ ok: false, reused: false, files: ["tools/_shared/draft.ts"] })

      // A package.json of its own makes a checked folder's files CommonJS, where `import.meta` is an error.
      const nested = yield* checkedWhileThere(root, check, "tools/package.json", "{}\n")
      expect([nested.ok, nested.reused]).toEqual([false, false])
      expect(nested.output).toContain("import.meta")

      // So does the project's, without `"type": "module"`.
      writeFileSync(join(root, "package.json"), "{}\n")
      const commonJs = yield* checkAt(root, check)
      expect([commonJs.ok, commonJs.reused]).toEqual([false, false])
      expect(commonJs.output).toContain("import.meta")
    }))
})
