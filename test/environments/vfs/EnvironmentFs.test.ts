import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { environmentFs, type FsError } from "../../../src/environments/vfs/EnvironmentFs.js"
import { memoryVfs } from "../../../src/environments/vfs/Vfs.js"

const text = (value: string) => new TextEncoder().encode(value)

const open = (options: { readOnly?: ReadonlyArray<string>; maxFileBytes?: number; maxTotalBytes?: number } = {}) =>
  environmentFs(
    memoryVfs(new Map([
      ["/README.md", text("# orientation")],
      ["/std/fs/index.d.ts", text("export {}")],
      ["/inbox/sales.csv", text("region,amount\nnorth,1\n")],
      ["/inbox/raw/a.txt", text("aaa")],
      ["/notes/x.md", text("# notes")]
    ])),
    { readOnly: options.readOnly ?? ["/inbox"], limits: { maxFileBytes: options.maxFileBytes ?? 1000, maxTotalBytes: options.maxTotalBytes ?? 10_000 } }
  )

const failure = <A>(result: Either.Either<A, FsError>): FsError => {
  if (Either.isRight(result)) throw new Error("the operation was expected to be refused")
  return result.left
}
const readText = (fs: ReturnType<typeof open>, path: string) => Either.getOrThrow(fs.readText(path))

describe("read-only zones", () => {
  it("refuses writing, removing, moving in or out and copying into /std, naming the zone and the fix", () => {
    const fs = open()
    const write = failure(fs.writeFile("/std/fs/index.d.ts", "changed"))
    expect(write._tag).toBe("ReadOnlyZone")
    expect(write.message).toContain("/std")
    expect(write.message).toContain("copy it to /tmp (cp /std/fs/index.d.ts /tmp/index.d.ts)")
    expect(failure(fs.remove("/std/fs/index.d.ts")).message).toContain("in /std, which is read-only")
    expect(failure(fs.move("/std/fs/index.d.ts", "/tmp/x.d.ts")).message).toContain("/std")
    expect(failure(fs.move("/notes/x.md", "/std/x.md")).message).toContain("/std")
    expect(failure(fs.copy("/notes/x.md", "/std/fs")).message).toContain("/std")
    expect(failure(fs.writeFile("/std/new.d.ts", "x")).message).toContain("write it under /tmp or /out instead")
    expect(readText(fs, "/std/fs/index.d.ts")).toBe("export {}")
    expect(fs.vfs.exists("/std/x.md") || fs.vfs.exists("/std/fs/x.md")).toBe(false)
    expect(fs.vfs.exists("/notes/x.md")).toBe(true)
    expect(fs.changed()).toBe(false)
  })

  it("refuses the definition's prefixes and the generated files the same way", () => {
    const fs = open()
    const inbox = failure(fs.writeFile("/inbox/sales.csv", "x"))
    expect(inbox._tag === "ReadOnlyZone" && inbox.zone).toBe("/inbox")
    expect(failure(fs.move("/inbox/raw", "/tmp")).message).toContain("/inbox")
    expect(failure(fs.copy("/notes/x.md", "/inbox/raw/")).message).toContain("/inbox")
    const readme = failure(fs.writeFile("/README.md", "mine"))
    expect(readme._tag === "ReadOnlyZone" && readme.zone).toBe("/README.md")
    expect(readme.message).toContain("copy it to /tmp")
    expect(readText(fs, "/inbox/sales.csv")).toBe("region,amount\nnorth,1\n")
  })

  it("refuses removing a folder that holds a read-only zone", () => {
    const fs = open()
    const refused = failure(fs.remove("/"))
    expect(refused._tag).toBe("ReadOnlyZone")
    expect(fs.vfs.exists("/notes/x.md")).toBe(true)
  })

  it("allows copying out of a read-only zone to work on the copy", () => {
    const fs = open()
    expect(Either.isRight(fs.copy("/inbox/sales.csv", "/tmp"))).toBe(true)
    expect(Either.isRight(fs.writeFile("/tmp/sales.csv", "changed"))).toBe(true)
    expect(readText(fs, "/inbox/sales.csv")).toBe("region,amount\nnorth,1\n")
    expect(fs.changed()).toBe(true)
  })
})

describe("byte limits", () => {
  it("refuses a file over maxFileBytes before changing anything", () => {
    const fs = open({ maxFileBytes: 10 })
    const before = fs.vfs.files()
    const refused = failure(fs.writeFile("/notes/x.md", "x".repeat(11)))
    expect(refused._tag === "LimitExceeded" && [refused.limit, refused.bytes, refused.max]).toEqual(["maxFileBytes", 11, 10])
    expect(refused.message).toContain("nothing was changed")
    expect(fs.vfs.files()).toEqual(before)
    expect(fs.changed()).toBe(false)
  })

  it("refuses growing the tree past maxTotalBytes, counting the file replaced, and always allows freeing space", () => {
    const fs = open({ maxTotalBytes: 100 })
    // The generated /README.md and /std do not count: only the agent's own files do.
    const total = fs.vfs.totalBytes() - "# orientation".length - "export {}".length
    expect(Either.isRight(fs.writeFile("/tmp/a", "x".repeat(100 - total)))).toBe(true)
    const refused = failure(fs.writeFile("/tmp/b", "y"))
    expect(refused._tag === "LimitExceeded" && refused.limit).toBe("maxTotalBytes")
    expect(fs.vfs.exists("/tmp/b")).toBe(false)
    expect(failure(fs.copy("/notes/x.md", "/tmp/copy.md"))._tag).toBe("LimitExceeded")
    // Replacing a file by a smaller one frees space: allowed even at the limit.
    expect(Either.isRight(fs.writeFile("/tmp/a", "x"))).toBe(true)
    expect(Either.isRight(fs.remove("/tmp/a"))).toBe(true)
  })
})

describe("moving and copying", () => {
  it("moves a folder with everything under it, and into an existing folder", () => {
    const fs = open({ readOnly: [] })
    expect(Either.isRight(fs.move("/inbox/raw", "/tmp/raw2"))).toBe(true)
    expect(readText(fs, "/tmp/raw2/a.txt")).toBe("aaa")
    expect(fs.vfs.exists("/inbox/raw")).toBe(false)
    expect(Either.isRight(fs.move("/notes/x.md", "/tmp"))).toBe(true)
    expect(readText(fs, "/tmp/x.md")).toBe("# notes")
    expect(Either.isRight(fs.copy("/tmp/raw2", "/out"))).toBe(true)
    expect(readText(fs, "/out/raw2/a.txt")).toBe("aaa")
    expect(readText(fs, "/tmp/raw2/a.txt")).toBe("aaa")
  })

  it("treats an empty zone as a folder, and a trailing slash as into the folder", () => {
    const fs = open({ readOnly: [] })
    expect(fs.vfs.exists("/out")).toBe(false)
    expect(Either.isRight(fs.copy("/notes/x.md", "/out"))).toBe(true)
    expect(readText(fs, "/out/x.md")).toBe("# notes")
    expect(Either.isRight(fs.move("/notes/x.md", "/archive/"))).toBe(true)
    expect(readText(fs, "/archive/x.md")).toBe("# notes")
    expect(failure(fs.writeFile("/tmp", "x"))._tag).toBe("NotAFile")
  })

  it("refuses moving a folder into itself, and a missing source, readably", () => {
    const fs = open({ readOnly: [] })
    expect(failure(fs.move("/inbox", "/inbox/raw/deeper")).message).toContain("into itself")
    const missing = failure(fs.copy("/inbox/nope.csv", "/tmp"))
    expect(missing._tag).toBe("NotFound")
    expect(missing.message).toBe("/inbox/nope.csv does not exist: ls /inbox to see what is there")
  })
})

describe("files and directories", () => {
  it("gives NotAFile for a file where a directory is, under a file, or reading a directory", () => {
    const fs = open({ readOnly: [] })
    const onDirectory = failure(fs.writeFile("/inbox/raw", "x"))
    expect(onDirectory._tag).toBe("NotAFile")
    expect(onDirectory.message).toContain("/inbox/raw is a directory")
    const underFile = failure(fs.writeFile("/notes/x.md/child.txt", "x"))
    expect(underFile._tag).toBe("NotAFile")
    expect(underFile.message).toContain("/notes/x.md is a file")
    const readDirectory = failure(fs.readFile("/inbox"))
    expect(readDirectory._tag).toBe("NotAFile")
    expect(readDirectory.message).toContain("ls /inbox")
    expect(failure(fs.copy("/inbox/raw", "/notes/x.md"))._tag).toBe("NotAFile")
    expect(failure(fs.writeFile("/a/../../x", "x"))._tag).toBe("InvalidPath")
  })

  it("keeps its own copy of written bytes and counts only real changes", () => {
    const fs = open()
    const bytes = text("abc")
    expect(Either.isRight(fs.writeFile("/tmp/b.bin", bytes))).toBe(true)
    bytes[0] = 0x7a
    expect(readText(fs, "/tmp/b.bin")).toBe("abc")
    fs.markClean()
    expect(Either.isRight(fs.writeFile("/tmp/b.bin", "abc"))).toBe(true)
    expect(fs.changed()).toBe(false)
    expect(Either.isRight(fs.writeFile("/tmp/b.bin", "abd"))).toBe(true)
    expect(fs.changed()).toBe(true)
  })
})
