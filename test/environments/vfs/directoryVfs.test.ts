import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, beforeEach } from "vitest"
import { directoryVfs, HostDirectoryUnreadable } from "../../../src/environments/vfs/directoryVfs.js"
import { environmentFs } from "../../../src/environments/vfs/EnvironmentFs.js"

const decode = (bytes: Uint8Array | undefined) => bytes === undefined ? undefined : new TextDecoder().decode(bytes)

let base: string
let root: string

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), "foundry-vfs-"))
  root = join(base, "project")
  mkdirSync(join(root, "inbox", "deep"), { recursive: true })
  writeFileSync(join(root, "inbox", "a.csv"), "x,y\n1,2\n")
  writeFileSync(join(root, "inbox", "deep", "b.txt"), "deep")
  writeFileSync(join(root, "notes.md"), "# notes")
  writeFileSync(join(base, "secret.txt"), "host secret")
  mkdirSync(join(base, "outside"))
  writeFileSync(join(base, "outside", "more.txt"), "more secrets")
  symlinkSync(join(base, "secret.txt"), join(root, "inbox", "escape.txt"))
  symlinkSync(join(base, "outside"), join(root, "outside-dir"))
  symlinkSync(join(root, "notes.md"), join(root, "inbox", "notes-link.md"))
  symlinkSync(root, join(root, "inbox", "loop"))
})

afterEach(() => {
  rmSync(base, { recursive: true, force: true })
})

const hostFiles = () => readdirSync(root, { recursive: true }).map(String).sort()

describe("directoryVfs", () => {
  it("reads the host folder through, listing its files", () => {
    const vfs = directoryVfs(root)
    expect(decode(vfs.read("/inbox/a.csv"))).toBe("x,y\n1,2\n")
    expect(vfs.exists("/inbox/deep")).toBe(true)
    expect(vfs.list("/inbox").map((entry) => entry.path)).toEqual(["/inbox/a.csv", "/inbox/deep", "/inbox/notes-link.md"])
    expect(vfs.list("/inbox/a.csv")).toEqual([{ path: "/inbox/a.csv", kind: "file", size: 8 }])
    expect(vfs.totalBytes()).toBe(8 + 4 + 7 + 7)
  })

  it("never follows a symlink out of the folder, nor a .. past it", () => {
    const vfs = directoryVfs(root)
    expect(vfs.read("/inbox/escape.txt")).toBeUndefined()
    expect(vfs.exists("/outside-dir")).toBe(false)
    expect(vfs.read("/outside-dir/more.txt")).toBeUndefined()
    expect(vfs.read("/../secret.txt")).toBeUndefined()
    expect([...vfs.files().values()].map(decode)).not.toContain("host secret")
    // A link inside the folder is followed; a link back to the root does not loop.
    expect(decode(vfs.read("/inbox/notes-link.md"))).toBe("# notes")
  })

  it("keeps writes and deletions in memory, leaving the host folder unchanged", () => {
    const before = hostFiles()
    const fs = environmentFs(directoryVfs(root), { readOnly: [], limits: { maxFileBytes: 1000, maxTotalBytes: 10_000 } })
    expect(Either.isRight(fs.writeFile("/inbox/a.csv", "changed"))).toBe(true)
    expect(Either.isRight(fs.writeFile("/out/new.txt", "new"))).toBe(true)
    expect(Either.isRight(fs.remove("/notes.md"))).toBe(true)
    expect(Either.isRight(fs.remove("/inbox/deep"))).toBe(true)
    expect(decode(fs.vfs.read("/inbox/a.csv"))).toBe("changed")
    expect(fs.vfs.read("/notes.md")).toBeUndefined()
    expect(fs.vfs.exists("/inbox/deep")).toBe(false)
    expect(fs.vfs.list("/").map((entry) => entry.path)).toEqual(["/inbox", "/out"])
    expect(readFileSync(join(root, "inbox", "a.csv"), "utf8")).toBe("x,y\n1,2\n")
    expect(readFileSync(join(root, "notes.md"), "utf8")).toBe("# notes")
    expect(hostFiles()).toEqual(before)
  })

  it("shows a file written again under a deleted folder, but not the host's other files there", () => {
    const vfs = directoryVfs(root)
    vfs.delete("/inbox")
    vfs.put("/inbox/c.txt", new TextEncoder().encode("c"))
    expect(vfs.list("/inbox").map((entry) => entry.path)).toEqual(["/inbox/c.txt"])
    expect(vfs.read("/inbox/a.csv")).toBeUndefined()
    expect(vfs.deleted()).toEqual(new Set(["/inbox"]))
    expect([...vfs.overlay().keys()]).toEqual(["/inbox/c.txt"])
  })

  it("reopens from a stored overlay and deleted set", () => {
    const vfs = directoryVfs(root, new Map([["/notes.md", new TextEncoder().encode("mine")]]), new Set(["/inbox/deep"]))
    expect(decode(vfs.read("/notes.md"))).toBe("mine")
    expect(vfs.exists("/inbox/deep/b.txt")).toBe(false)
  })

  it("refuses a missing folder", () => {
    expect(() => directoryVfs(join(base, "missing"))).toThrow(HostDirectoryUnreadable)
  })
})
