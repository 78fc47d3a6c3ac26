import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { grep } from "../../../src/environments/vfs/grep.js"
import { memoryVfs } from "../../../src/environments/vfs/Vfs.js"

const text = (value: string) => new TextEncoder().encode(value)

const vfs = memoryVfs(new Map([
  ["/inbox/a.csv", text("region,amount\nNorth,10\nsouth,20\n")],
  ["/inbox/b.md", text("# Notes\nnorth is up\n")],
  ["/inbox/image.png", new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0x6e, 0x6f, 0x72, 0x74, 0x68])],
  ["/scripts/x.js", text("const north = 1\n")]
]))

describe("grep", () => {
  it("finds lines by regular expression, with path and line number, under a folder", () => {
    const found = Either.getOrThrow(grep(vfs, { pattern: "^nor|h,2", path: "/inbox" }))
    expect(found).toEqual({
      matches: [{ path: "/inbox/a.csv", line: 3, text: "south,20" }, { path: "/inbox/b.md", line: 2, text: "north is up" }],
      truncated: false
    })
  })

  it("ignores case on request, and skips binary files", () => {
    const found = Either.getOrThrow(grep(vfs, { pattern: "north", ignoreCase: true }))
    expect(found.matches.map((match) => match.path)).toEqual(["/inbox/a.csv", "/inbox/b.md", "/scripts/x.js"])
    expect(Either.getOrThrow(grep(vfs, { pattern: "north" })).matches).toHaveLength(2)
  })

  it("stops at maxMatches and says so", () => {
    const found = Either.getOrThrow(grep(vfs, { pattern: "o", maxMatches: 2 }))
    expect(found.matches).toHaveLength(2)
    expect(found.truncated).toBe(true)
  })

  it("searches a single file", () => {
    expect(Either.getOrThrow(grep(vfs, { pattern: "10", path: "/inbox/a.csv" })).matches).toEqual([{ path: "/inbox/a.csv", line: 2, text: "North,10" }])
  })

  it("explains an invalid regular expression and a missing path", () => {
    const invalid = grep(vfs, { pattern: "total (" })
    expect(Either.isLeft(invalid) && invalid.left._tag).toBe("InvalidPattern")
    expect(Either.isLeft(invalid) && invalid.left.message).toContain("is not a valid regular expression")
    expect(Either.isLeft(invalid) && invalid.left.message).toContain("backslash")
    const missing = grep(vfs, { pattern: "x", path: "/nope" })
    expect(Either.isLeft(missing) && missing.left._tag).toBe("NotFound")
  })

  it("stops a pattern that backtracks exponentially within its time budget, with a readable error", () => {
    const evil = memoryVfs(new Map([["/inbox/a.txt", text(`ok\n${"a".repeat(29)}b\n`)]]))
    const started = Date.now()
    const found = grep(evil, { pattern: "^(a+)+$", timeoutMs: 200 })
    expect(Date.now() - started).toBeLessThan(1500)
    expect(Either.isLeft(found) && found.left._tag).toBe("InvalidPattern")
    expect(Either.isLeft(found) && found.left.message).toContain("took longer than 200 ms")
    expect(Either.isLeft(found) && found.left.message).toContain("(a+)+")
    // The same text with a linear pattern is searched as usual.
    expect(Either.getOrThrow(grep(evil, { pattern: "^a+b$" })).matches).toEqual([{ path: "/inbox/a.txt", line: 2, text: `${"a".repeat(29)}b` }])
  })

  it("clips long lines and numbers lines after CRLF endings as before", () => {
    const long = memoryVfs(new Map([["/t.txt", text(`first\r\n${"x".repeat(310)}\r\n`)]]))
    expect(Either.getOrThrow(grep(long, { pattern: "^x" })).matches).toEqual([{ path: "/t.txt", line: 2, text: `${"x".repeat(300)}… (10 more characters)` }])
  })
})
