import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { environmentFs } from "../../../src/environments/vfs/EnvironmentFs.js"
import { fsCall, fsExports, fsModuleDoc } from "../../../src/environments/vfs/fsModule.js"
import { memoryVfs } from "../../../src/environments/vfs/Vfs.js"

const open = () =>
  environmentFs(memoryVfs(new Map([["/inbox/a.json", new TextEncoder().encode(`{"n": 1}`)], ["/std/fs/index.d.ts", new Uint8Array()]])), {
    readOnly: [],
    limits: { maxFileBytes: 100, maxTotalBytes: 1000 }
  })

const value = (result: Either.Either<unknown, { readonly message: string }>): unknown => {
  if (Either.isLeft(result)) throw new Error(result.left.message)
  return result.right
}
const message = (result: Either.Either<unknown, { readonly message: string }>): string => {
  if (Either.isRight(result)) throw new Error("the call was expected to fail")
  return result.left.message
}

describe("env:fs on the host", () => {
  it("declares every function it answers", () => {
    expect(fsModuleDoc.exports).toBe(fsExports)
    for (const name of fsExports) expect(fsModuleDoc.types).toContain(`export function ${name}(`)
  })

  it("reads, writes, lists, moves, copies and removes through the gateway", () => {
    const fs = open()
    expect(value(fsCall(fs, "readJson", ["/inbox/a.json"]))).toEqual({ n: 1 })
    expect(value(fsCall(fs, "writeJson", ["/tmp/b.json", { ok: true }]))).toBeUndefined()
    expect(value(fsCall(fs, "readText", ["/tmp/b.json"]))).toBe(`{\n  "ok": true\n}\n`)
    expect(value(fsCall(fs, "writeFile", ["/tmp/bytes.bin", new Uint16Array([1])]))).toBeUndefined()
    expect(value(fsCall(fs, "readFile", ["/tmp/bytes.bin"]))).toEqual(new Uint8Array([1, 0]))
    expect(value(fsCall(fs, "exists", ["/tmp"]))).toBe(true)
    expect(value(fsCall(fs, "list", ["/tmp"]))).toEqual([
      { path: "/tmp/b.json", kind: "file", size: 17 },
      { path: "/tmp/bytes.bin", kind: "file", size: 2 }
    ])
    expect(value(fsCall(fs, "list", [undefined, { recursive: true }]))).toHaveLength(8)
    expect(value(fsCall(fs, "copy", ["/tmp/b.json", "/out/b.json"]))).toBeUndefined()
    expect(value(fsCall(fs, "move", ["/tmp", "/old"]))).toBeUndefined()
    expect(value(fsCall(fs, "remove", ["/old"]))).toBeUndefined()
    expect(value(fsCall(fs, "exists", ["/old/b.json"]))).toBe(false)
    expect(value(fsCall(fs, "exists", ["/out/b.json"]))).toBe(true)
  })

  it("keeps the gateway's rules: read-only zones and limits", () => {
    const fs = open()
    expect(message(fsCall(fs, "writeFile", ["/std/fs/index.d.ts", "x"]))).toContain("in /std, which is read-only")
    expect(message(fsCall(fs, "writeFile", ["/tmp/big", "x".repeat(101)]))).toContain("per file")
  })

  it("refuses wrong arguments with a message naming the function and what it needs", () => {
    const fs = open()
    expect(message(fsCall(fs, "readFile", [42]))).toBe(`readFile: path must be a string path such as "/inbox/data.csv", got number`)
    expect(message(fsCall(fs, "writeFile", ["/tmp/x", { a: 1 }]))).toContain("use writeJson(path, value)")
    expect(message(fsCall(fs, "move", ["/inbox/a.json"]))).toBe(`move: to must be a string path such as "/inbox/data.csv", got undefined`)
    expect(message(fsCall(fs, "list", ["/", { recursive: "yes" }]))).toContain("options.recursive must be true or false")
    expect(message(fsCall(fs, "list", ["/inbox/a.json"]))).toContain("is a file, not a folder")
    expect(message(fsCall(fs, "writeJson", ["/tmp/x", undefined]))).toContain("has no JSON form")
    expect(message(fsCall(fs, "writeJson", ["/tmp/x", { big: 1n }]))).toContain("cannot be written as JSON")
    expect(message(fsCall(fs, "deleteEverything", []))).toContain("it offers readFile, readText")
    expect(message(fsCall(fs, "exists", ["/../x"]))).toContain("climbs above the root")
  })

  it("says when a file is not JSON", () => {
    const fs = open()
    value(fsCall(fs, "writeFile", ["/tmp/t.json", "not json"]))
    expect(message(fsCall(fs, "readJson", ["/tmp/t.json"]))).toContain("/tmp/t.json is not valid JSON")
  })
})
