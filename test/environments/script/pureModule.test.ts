import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { bundlePureModule } from "../../../src/environments/script/pureModule.js"
import { ScriptRunnerLive } from "../../../src/environments/script/ScriptRunner.js"
import { packageLayout } from "../../../src/packageLayout.js"
import { runIn, scriptRun } from "./scripts.js"

/** A folder with packages in its node_modules: name -> { file: content }, removed afterwards. */
const withPackages = (packages: Record<string, Record<string, string>>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const root = mkdtempSync(join(tmpdir(), "foundry-pure-"))
      for (const [name, files] of Object.entries(packages)) {
        for (const [file, content] of Object.entries(files)) {
          mkdirSync(join(root, "node_modules", name, ...file.split("/").slice(0, -1)), { recursive: true })
          writeFileSync(join(root, "node_modules", name, file), content)
        }
      }
      return root
    }),
    (root) => Effect.sync(() => rmSync(root, { recursive: true, force: true }))
  )

const xlsx = { name: "xlsx", from: "@e965/xlsx", pick: ["read", "write", "utils"], resolveFrom: packageLayout.root }

describe("bundlePureModule", () => {
  it.live("bundles the picked exports of a package, and a script builds and reads back a workbook with them", () =>
    Effect.gen(function*() {
      const source = yield* bundlePureModule(xlsx)
      expect(yield* bundlePureModule(xlsx)).toBe(source)
      const result = yield* runIn("p", scriptRun("/scripts/book.js", `import { read, write, utils } from "env:xlsx"
export default async function () {
  const book = utils.book_new()
  utils.book_append_sheet(book, utils.aoa_to_sheet([["name", "qty"], ["apple", 3], ["pear", 5]]), "Stock")
  const bytes = write(book, { type: "array", bookType: "xlsx" })
  const back = read(new Uint8Array(bytes), { type: "array" })
  let escaped
  try { escaped = utils.constructor.constructor("return process")() } catch (e) { escaped = e.name }
  return { sheets: back.SheetNames, rows: utils.sheet_to_json(back.Sheets.Stock), escaped }
}`, { modules: [{ ...xlsx, exports: xlsx.pick, kind: "pure", source }] }))
      expect(result._tag === "Completed" ? result.value : result).toEqual({
        sheets: ["Stock"],
        rows: [{ name: "apple", qty: 3 }, { name: "pear", qty: 5 }],
        escaped: "ReferenceError"
      })
    }).pipe(Effect.provide(ScriptRunnerLive())))

  it.effect("refuses a pick the package does not export, naming it", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(bundlePureModule({ ...xlsx, pick: ["read", "readWorkbook"] }))
      expect(error.message).toBe(`env:xlsx: @e965/xlsx has no export "readWorkbook"`)
    }))

  it.scoped("refuses a missing name of a CommonJS package too", () =>
    Effect.gen(function*() {
      const root = yield* withPackages({ "plain-cjs": { "package.json": `{"name":"plain-cjs","version":"1.0.0","main":"index.js"}`, "index.js": "exports.add = (a, b) => a + b\n" } })
      const source = yield* bundlePureModule({ name: "plain", from: "plain-cjs", pick: ["add"], resolveFrom: root })
      expect(source).toContain("exports.add")
      const error = yield* Effect.flip(bundlePureModule({ name: "plain", from: "plain-cjs", pick: ["add", "sub"], resolveFrom: root }))
      expect(error.message).toBe(`env:plain: plain-cjs has no export "sub"`)
    }))

  it.scoped("refuses a package that needs a Node built-in, naming the built-in", () =>
    Effect.gen(function*() {
      const root = yield* withPackages({
        "needs-fs": {
          "package.json": `{"name":"needs-fs","version":"1.0.0","type":"module","main":"index.js"}`,
          "index.js": `import { helper } from "./helper.js"\nexport const load = helper\n`,
          "helper.js": `import { readFileSync } from "node:fs"\nexport const helper = (p) => readFileSync(p)\n`
        }
      })
      const error = yield* Effect.flip(bundlePureModule({ name: "files", from: "needs-fs", pick: ["load"], resolveFrom: root }))
      expect(error.message).toBe(`env:files: needs-fs needs the Node built-in "node:fs" (imported by needs-fs/helper.js), which scripts do not have`)
    }))

  it.effect("refuses a package that is not installed", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(bundlePureModule({ name: "x", from: "surely-not-installed-pkg", pick: ["a"], resolveFrom: packageLayout.root }))
      expect(error._tag).toBe("PureModuleError")
      expect(error.message).toContain(`the package "surely-not-installed-pkg" is not installed`)
    }))
})
