import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { ancestorsOf, normalizePath, zoneOf } from "../../../src/environments/vfs/paths.js"

const normalized = (path: string) => Either.getOrThrow(normalizePath(path))
const refusal = (path: string) => {
  const result = normalizePath(path)
  if (Either.isRight(result)) throw new Error(`${path} was accepted as ${result.right}`)
  return result.left
}

describe("normalizePath", () => {
  it("resolves . and .., repeated and trailing slashes", () => {
    expect(normalized("/a/./b/../c")).toBe("/a/c")
    expect(normalized("//inbox///data.csv/")).toBe("/inbox/data.csv")
    expect(normalized("/")).toBe("/")
    expect(normalized("/a/..")).toBe("/")
  })

  it("takes a relative path from the root", () => {
    expect(normalized("inbox/a.csv")).toBe("/inbox/a.csv")
    expect(normalized("./tmp/x")).toBe("/tmp/x")
  })

  it("refuses a .. above the root, NUL, an empty path and an overlong one, saying why", () => {
    expect(refusal("/../etc/passwd").message).toContain("climbs above the root")
    expect(refusal("../x")._tag).toBe("InvalidPath")
    expect(refusal("/a\0b").message).toContain("NUL")
    expect(refusal("").message).toContain("empty")
    expect(refusal("   ").message).toContain("empty")
    expect(refusal(`/${"a".repeat(1100)}`).message).toContain("1024")
  })
})

describe("zoneOf", () => {
  it("names the zone a path lies in, and nothing for other paths", () => {
    expect(zoneOf("/inbox/a.csv")).toBe("/inbox")
    expect(zoneOf("/std")).toBe("/std")
    expect(zoneOf("/out/report/x.md")).toBe("/out")
    expect(zoneOf("/notes/x.md")).toBeUndefined()
    expect(zoneOf("/inboxes/a")).toBeUndefined()
    expect(zoneOf("/")).toBeUndefined()
  })
})

describe("ancestorsOf", () => {
  it("lists the folders above a path, outermost first", () => {
    expect(ancestorsOf("/a/b/c")).toEqual(["/a", "/a/b"])
    expect(ancestorsOf("/a")).toEqual([])
  })
})
