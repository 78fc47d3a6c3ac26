import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { ScriptRunnerLive } from "../../../src/environments/script/ScriptRunner.js"
import { validateScript } from "../../../src/environments/script/validateScript.js"

const modules = [
  { name: "fs", exports: ["readFile", "readText", "writeFile", "list"] },
  { name: "xlsx", exports: ["read", "write", "utils"] },
  { name: "test", exports: ["test", "assert"] }
]

const problem = (path: string, source: string, options?: { readonly test?: boolean }) =>
  Effect.flatMap(validateScript(path, source, modules, options), (check) =>
    check._tag === "Valid" ? Effect.dieMessage(`expected ${path} to be refused`) : Effect.succeed(check.message))

layer(ScriptRunnerLive())("validateScript", (it) => {
  it.effect("compiles a TypeScript script that imports env: modules to code the worker runs", () =>
    Effect.gen(function*() {
      const check = yield* validateScript("/scripts/sum.ts", `import { readText } from "env:fs"
import type { Something } from "env:fs"
interface Args { readonly path: string }
export default async function (args: Args): Promise<number> {
  return (await readText(args.path)).length
}
`, modules)
      expect(check._tag).toBe("Valid")
      if (check._tag !== "Valid") return
      expect(check.code).toContain(`require("env:fs")`)
      expect(check.code).not.toContain("interface")
      expect(check.code).toContain("sourceMappingURL=data:application/json")
    }))

  it.effect("checks scripts one after another on the thread it keeps without piling listeners on it (a Node warning, a leak)", () =>
    Effect.gen(function*() {
      const warnings: Array<string> = []
      const onWarning = (warning: Error) => warnings.push(warning.name)
      process.on("warning", onWarning)
      yield* Effect.addFinalizer(() => Effect.sync(() => process.off("warning", onWarning)))
      for (let script = 0; script < 15; script++) {
        expect((yield* validateScript(`/scripts/s${script}.js`, "export default async function (args) { return args }", modules))._tag).toBe("Valid")
      }
      // Node says so on its next turn.
      yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
      expect(warnings).not.toContain("MaxListenersExceededWarning")
    }).pipe(Effect.scoped))

  it.effect("refuses a syntax error with its line and column", () =>
    Effect.gen(function*() {
      const message = yield* problem("/scripts/a.js", `export default async function () {\n  const x = ;\n}\n`)
      expect(message).toMatch(/^line 2:13: /)
      expect(message).toContain("const x = ;")
    }))

  it.effect("refuses a line of thousands of syntax errors from the parser's count, at once, and checks the next script as before", () =>
    Effect.gen(function*() {
      // esbuild quotes the whole line with each of its 50,000 problems: minutes, or its service ended.
      const message = yield* problem("/scripts/a.js", `export default () => 1\nx = ${"-".repeat(100_000)}1\n`)
      expect(message).toMatch(/^line 2:\d+: Expression expected\./)
      expect(message).toMatch(/… and \d{5} more problems$/)
      expect(message.length).toBeLessThan(5_000)
      expect((yield* validateScript("/scripts/b.js", "export default async function (args) { return args }", modules))._tag).toBe("Valid")
    }), { timeout: 30_000 })

  it.effect("refuses a script without a default export, saying what to write", () =>
    Effect.gen(function*() {
      expect(yield* problem("/scripts/a.js", `export const main = () => 1\n`)).toContain("export default async function (args)")
      expect(yield* problem("/scripts/b.js", `export default { run: () => 1 }\n`)).toContain("the default export must be a function")
    }))

  it.effect("accepts the forms of a default function", () =>
    Effect.gen(function*() {
      for (const source of [
        "export default async function (args) { return args }",
        "export default (args) => args",
        "async function main(args) { return args }\nexport default main",
        "const main = async () => 1\nexport { main as default }"
      ]) expect((yield* validateScript("/scripts/a.js", source, modules))._tag).toBe("Valid")
    }))

  it.effect("refuses a module that does not exist, suggesting the near one", () =>
    Effect.gen(function*() {
      const message = yield* problem("/scripts/a.js", `import { read } from "env:xslx"\nexport default () => read\n`)
      expect(message).toBe(`line 1:22: there is no module "env:xslx"; did you mean "env:xlsx"? (the modules: env:fs, env:xlsx)`)
    }))

  it.effect("refuses a wrong import name with the import line it should be", () =>
    Effect.gen(function*() {
      expect(yield* problem("/scripts/a.js", `import { readfile } from "env:fs"\nexport default () => readfile\n`))
        .toBe(`line 1:8: env:fs has no export "readfile"; did you mean: import { readFile } from "env:fs"`)
      expect(yield* problem("/scripts/a.js", `import { writeFile, readfile as read } from "env:fs"\nexport default () => read\n`))
        .toContain(`did you mean: import { writeFile, readFile as read } from "env:fs"`)
    }))

  it.effect("lists the exports when no name is near the wrong one", () =>
    Effect.gen(function*() {
      expect(yield* problem("/scripts/a.js", `import { parseWorkbook } from "env:xlsx"\nexport default () => parseWorkbook\n`))
        .toBe(`line 1:8: env:xlsx has no export "parseWorkbook"; its exports: read, write, utils`)
    }))

  it.effect("refuses a Node or package import, saying scripts import only env: modules", () =>
    Effect.gen(function*() {
      const message = yield* problem("/scripts/a.js", `import { readFileSync } from "node:fs"\nexport default () => readFileSync\n`)
      expect(message).toContain(`scripts import only env: modules, not "node:fs"; did you mean "env:fs"?`)
      expect(message).toContain("env:fs, env:xlsx")
      expect(yield* problem("/scripts/a.js", `import _ from "lodash"\nexport default () => _\n`)).toContain(`scripts import only env: modules, not "lodash"`)
    }))

  it.effect("refuses a require of anything but an env: module, in the words the loader uses when the script runs", () =>
    Effect.gen(function*() {
      expect(yield* problem("/scripts/a.js", `export default async () => {\n  return require("node:fs").readFileSync("/etc/passwd")\n}\n`)).toBe(
        `line 2:18: scripts load only env: modules (import them, or require("env:<name>")), not "node:fs"; did you mean require("env:fs")? (the modules: env:fs, env:xlsx; see /skills/imports.md)`
      )
      expect(yield* problem("/scripts/a.js", "const x = require(`lodash`)\nexport default () => x\n")).toBe(
        `line 1:19: scripts load only env: modules (import them, or require("env:<name>")), not "lodash" (the modules: env:fs, env:xlsx; see /skills/imports.md)`
      )
      expect(yield* problem("/scripts/a.js", `const { read } = require("env:xslx")\nexport default () => read\n`))
        .toBe(`line 1:26: there is no module "env:xslx"; did you mean require("env:xlsx")? (the modules: env:fs, env:xlsx)`)
      expect((yield* validateScript("/scripts/a.js", `const { readText } = require("env:fs")\nexport default (args) => readText(args.path)\n`, modules))._tag).toBe("Valid")
    }))

  it.effect("refuses import() wherever it is", () =>
    Effect.gen(function*() {
      expect(yield* problem("/scripts/a.js", `export default async () => {\n  const fs = await import("node:fs")\n}\n`)).toMatch(/^line 2:20: scripts cannot import\(\)/)
    }))

  it.effect("reports every problem, in order", () =>
    Effect.gen(function*() {
      const message = yield* problem("/scripts/a.js", `import { nope } from "env:fs"\nimport x from "os"\n`)
      expect(message.split("\n")).toHaveLength(3)
      expect(message.split("\n")[0]).toMatch(/^line 1:1: .*has no default export/)
    }))

  it.effect("lets a test file import env:test without a default export, and only a test file", () =>
    Effect.gen(function*() {
      const source = `import { test, assert } from "env:test"\ntest("adds", () => assert.equal(1 + 1, 2))\n`
      expect((yield* validateScript("/scripts/a.test.js", source, modules, { test: true }))._tag).toBe("Valid")
      expect(yield* problem("/scripts/a.js", `${source}export default () => 1\n`)).toContain("env:test is for test files")
    }))

  it.effect("knows env:test even when the caller does not list it", () =>
    Effect.gen(function*() {
      const check = yield* validateScript("/scripts/a.test.js", `import { test } from "env:test"\ntest("x", () => {})\n`, [], { test: true })
      expect(check._tag).toBe("Valid")
    }))

  it.effect("refuses a line too long to compile at once, saying how long and to split it, and checks the next script as before", () =>
    Effect.gen(function*() {
      // Valid to TypeScript's parser, a problem per "--1" to esbuild, each sent with the whole
      // 80,000-character line: the check held the process for about a minute and gigabytes.
      const started = Date.now()
      const message = yield* problem("/scripts/a.js", `export default () => 1\n${"--1;".repeat(20_000)}\n`)
      expect(message).toBe("line 2 is 80,000 characters long (at most 10,000 a line): " +
        "split it over several lines; put long data in a JSON file and read it (readText, then JSON.parse)")
      expect(Date.now() - started).toBeLessThan(5_000)
      expect((yield* validateScript("/scripts/b.js", "export default async function (args) { return args }", modules))._tag).toBe("Valid")
    }), { timeout: 20_000 })
})

// On the live clock: a compile's time limit is measured on the clock of the fiber that checks.
describe("validateScript on a thread of its own", () => {
  it.live("refuses a script whose problems take too long to compile, while the process checks another script", () =>
    Effect.gen(function*() {
      // A problem in each of 96,000 statements, on lines short enough to be let through: esbuild sends
      // each with its 9,600-character line, and the check held the process for half a minute.
      // Compiled on a thread of its own, it is stopped at its time limit.
      const flood = `export default () => 1\n${`${"--1;".repeat(2_400)}\n`.repeat(40)}`
      const ended: Array<string> = []
      const started = Date.now()
      const [refused, other] = yield* Effect.all([
        problem("/scripts/flood.js", flood).pipe(Effect.tap(() => ended.push("flood"))),
        validateScript("/scripts/b.js", "export default async function (args) { return args }", modules).pipe(Effect.tap(() => ended.push("other")))
      ], { concurrency: 2 })
      expect(refused).toBe("/scripts/flood.js could not be compiled within 1s: it has too many problems to list " +
        "(one in each of thousands of statements, say), or is too large; write it anew in smaller pieces, checking each")
      expect(other._tag).toBe("Valid")
      expect(ended).toEqual(["other", "flood"])
      expect(Date.now() - started).toBeLessThan(5_000)
    }).pipe(Effect.provide(ScriptRunnerLive({ checkTimeoutMs: 1_000 }))), { timeout: 20_000 })
})
