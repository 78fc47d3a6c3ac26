import { describe, expect, it } from "@effect/vitest"
import { validateScript } from "../../../src/environments/script/validateScript.js"

const modules = [
  { name: "fs", exports: ["readFile", "readText", "writeFile", "list"] },
  { name: "xlsx", exports: ["read", "write", "utils"] },
  { name: "test", exports: ["test", "assert"] }
]

const problem = (path: string, source: string, options?: { readonly test?: boolean }): string => {
  const check = validateScript(path, source, modules, options)
  if (check._tag === "Valid") throw new Error(`expected ${path} to be refused`)
  return check.message
}

describe("validateScript", () => {
  it("compiles a TypeScript script that imports env: modules to code the worker runs", () => {
    const check = validateScript("/scripts/sum.ts", `import { readText } from "env:fs"
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
  })

  it("refuses a syntax error with its line and column", () => {
    const message = problem("/scripts/a.js", `export default async function () {\n  const x = ;\n}\n`)
    expect(message).toMatch(/^line 2:13: /)
    expect(message).toContain("const x = ;")
  })

  it("refuses a line of thousands of syntax errors from the parser's count, at once, and checks the next script as before", () => {
    // esbuild quotes the whole line with each of its 50,000 problems: minutes, or its service ended.
    const message = problem("/scripts/a.js", `export default () => 1\nx = ${"-".repeat(100_000)}1\n`)
    expect(message).toMatch(/^line 2:\d+: Expression expected\./)
    expect(message).toMatch(/… and \d{5} more problems$/)
    expect(message.length).toBeLessThan(5_000)
    expect(validateScript("/scripts/b.js", "export default async function (args) { return args }", modules)._tag).toBe("Valid")
  }, 30_000)

  it("refuses a script without a default export, saying what to write", () => {
    expect(problem("/scripts/a.js", `export const main = () => 1\n`)).toContain("export default async function (args)")
    expect(problem("/scripts/b.js", `export default { run: () => 1 }\n`)).toContain("the default export must be a function")
  })

  it("accepts the forms of a default function", () => {
    for (const source of [
      "export default async function (args) { return args }",
      "export default (args) => args",
      "async function main(args) { return args }\nexport default main",
      "const main = async () => 1\nexport { main as default }"
    ]) expect(validateScript("/scripts/a.js", source, modules)._tag).toBe("Valid")
  })

  it("refuses a module that does not exist, suggesting the near one", () => {
    const message = problem("/scripts/a.js", `import { read } from "env:xslx"\nexport default () => read\n`)
    expect(message).toBe(`line 1:22: there is no module "env:xslx"; did you mean "env:xlsx"? (the modules: env:fs, env:xlsx)`)
  })

  it("refuses a wrong import name with the import line it should be", () => {
    expect(problem("/scripts/a.js", `import { readfile } from "env:fs"\nexport default () => readfile\n`))
      .toBe(`line 1:8: env:fs has no export "readfile"; did you mean: import { readFile } from "env:fs"`)
    expect(problem("/scripts/a.js", `import { writeFile, readfile as read } from "env:fs"\nexport default () => read\n`))
      .toContain(`did you mean: import { writeFile, readFile as read } from "env:fs"`)
  })

  it("lists the exports when no name is near the wrong one", () => {
    expect(problem("/scripts/a.js", `import { parseWorkbook } from "env:xlsx"\nexport default () => parseWorkbook\n`))
      .toBe(`line 1:8: env:xlsx has no export "parseWorkbook"; its exports: read, write, utils`)
  })

  it("refuses a Node or package import, saying scripts import only env: modules", () => {
    const message = problem("/scripts/a.js", `import { readFileSync } from "node:fs"\nexport default () => readFileSync\n`)
    expect(message).toContain(`scripts import only env: modules, not "node:fs"; did you mean "env:fs"?`)
    expect(message).toContain("env:fs, env:xlsx")
    expect(problem("/scripts/a.js", `import _ from "lodash"\nexport default () => _\n`)).toContain(`scripts import only env: modules, not "lodash"`)
  })

  it("refuses a require of anything but an env: module, in the words the loader uses when the script runs", () => {
    expect(problem("/scripts/a.js", `export default async () => {\n  return require("node:fs").readFileSync("/etc/passwd")\n}\n`)).toBe(
      `line 2:18: scripts load only env: modules (import them, or require("env:<name>")), not "node:fs"; did you mean require("env:fs")? (the modules: env:fs, env:xlsx; see /skills/imports.md)`
    )
    expect(problem("/scripts/a.js", "const x = require(`lodash`)\nexport default () => x\n")).toBe(
      `line 1:19: scripts load only env: modules (import them, or require("env:<name>")), not "lodash" (the modules: env:fs, env:xlsx; see /skills/imports.md)`
    )
    expect(problem("/scripts/a.js", `const { read } = require("env:xslx")\nexport default () => read\n`))
      .toBe(`line 1:26: there is no module "env:xslx"; did you mean require("env:xlsx")? (the modules: env:fs, env:xlsx)`)
    expect(validateScript("/scripts/a.js", `const { readText } = require("env:fs")\nexport default (args) => readText(args.path)\n`, modules)._tag).toBe("Valid")
  })

  it("refuses import() wherever it is", () => {
    expect(problem("/scripts/a.js", `export default async () => {\n  const fs = await import("node:fs")\n}\n`)).toMatch(/^line 2:20: scripts cannot import\(\)/)
  })

  it("reports every problem, in order", () => {
    const message = problem("/scripts/a.js", `import { nope } from "env:fs"\nimport x from "os"\n`)
    expect(message.split("\n")).toHaveLength(3)
    expect(message.split("\n")[0]).toMatch(/^line 1:1: .*has no default export/)
  })

  it("lets a test file import env:test without a default export, and only a test file", () => {
    const source = `import { test, assert } from "env:test"\ntest("adds", () => assert.equal(1 + 1, 2))\n`
    expect(validateScript("/scripts/a.test.js", source, modules, { test: true })._tag).toBe("Valid")
    expect(problem("/scripts/a.js", `${source}export default () => 1\n`)).toContain("env:test is for test files")
  })

  it("knows env:test even when the caller does not list it", () => {
    const check = validateScript("/scripts/a.test.js", `import { test } from "env:test"\ntest("x", () => {})\n`, [], { test: true })
    expect(check._tag).toBe("Valid")
  })
})
