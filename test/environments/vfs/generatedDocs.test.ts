import { describe, expect, it } from "@effect/vitest"
import { fsModuleDoc } from "../../../src/environments/vfs/fsModule.js"
import { generatedDocs, generatedPaths, type ModuleDoc } from "../../../src/environments/vfs/generatedDocs.js"

const testDoc: ModuleDoc = {
  name: "test",
  kind: "test",
  description: "write tests for your scripts",
  exports: ["test", "assert"],
  types: "export function test(name: string, body: () => void): void"
}
const xlsxDoc: ModuleDoc = {
  name: "xlsx",
  kind: "pure",
  description: "read and write spreadsheets",
  exports: ["read", "utils"],
  types: "export const read: unknown\nexport const utils: unknown\n",
  readme: "Use `read(bytes, { type: \"array\" })`."
}

const docs = generatedDocs([fsModuleDoc, testDoc, xlsxDoc], { maxFileBytes: 5_000_000, maxTotalBytes: 50_000_000, scriptTimeoutMs: 10_000, maxOutputBytes: 8_000 }, {
  description: "Quarterly sales analysis.",
  readOnly: ["/inbox"]
})
const file = (path: string): string => {
  const bytes = docs.get(path)
  if (bytes === undefined) throw new Error(`${path} was not generated`)
  return new TextDecoder().decode(bytes)
}

describe("generatedDocs", () => {
  it("writes the orientation, the skills, and a declaration file and README per module", () => {
    expect([...docs.keys()].sort()).toEqual([
      "/README.md", "/skills/README.md", "/skills/imports.md",
      "/std/fs/README.md", "/std/fs/index.d.ts", "/std/test/README.md", "/std/test/index.d.ts",
      "/std/xlsx/README.md", "/std/xlsx/index.d.ts"
    ])
    for (const path of docs.keys()) expect(generatedPaths.some((prefix) => path === prefix || path.startsWith(`${prefix}/`))).toBe(true)
  })

  it("orients: description, every zone, read-only paths, limits, modules, large files", () => {
    const readme = file("/README.md")
    expect(readme).toContain("Quarterly sales analysis.")
    for (const zone of ["/inbox", "/scripts", "/skills", "/std", "/tmp", "/out"]) expect(readme).toContain(`\`${zone}\``)
    expect(readme).toContain("Read-only: `/std`, `/README.md`, `/skills/README.md`, `/skills/imports.md`, `/inbox`")
    expect(readme).toContain("at most 5 MB; your files together (not these generated docs) at most 50 MB")
    expect(readme).toContain("at most 10 s")
    expect(readme).toContain("- `env:xlsx`: read and write spreadsheets (see /std/xlsx/README.md)")
    expect(readme).toContain("Never read a whole large file")
  })

  it("gives each module's README its exact import line, and its declarations as given", () => {
    expect(file("/std/fs/README.md")).toContain(`import { readFile, readText, writeFile, exists, list, remove, move, copy, readJson, writeJson } from "env:fs"`)
    expect(file("/std/xlsx/README.md")).toContain(`import { read, utils } from "env:xlsx"`)
    expect(file("/std/xlsx/README.md")).toContain("Use `read(bytes, { type: \"array\" })`.")
    expect(file("/std/xlsx/index.d.ts")).toBe(xlsxDoc.types)
    expect(file("/std/fs/index.d.ts")).toContain("export function readText(path: string): Promise<string>")
  })

  it("teaches how to write, run and test a script, handle large inputs and present results", () => {
    const skills = file("/skills/README.md")
    expect(skills).toContain("export default async function (args) {")
    expect(skills).toContain(`import { readText, writeFile } from "env:fs"`)
    expect(skills).toContain("run_script")
    expect(skills).toContain("`env:<name>`")
    expect(skills).toContain(`import { test, assert } from "env:test"`)
    expect(skills).toContain("*.test.js")
    expect(skills).toContain("run_tests")
    expect(skills).toContain("Never read a whole big file into the conversation")
    expect(skills).toContain("`present`")
    expect(skills).toContain("caption")
    expect(skills).toContain("A line of a script holds at most 10,000 characters")
  })

  it("lists every module with its import line and exports in /skills/imports.md", () => {
    const imports = file("/skills/imports.md")
    expect(imports).toContain("## env:fs")
    expect(imports).toContain(`import { test, assert } from "env:test"`)
    expect(imports).toContain(`import { read, utils } from "env:xlsx"`)
    expect(imports).toContain("Exports: `read`, `utils`.")
  })
})
