import { describe, expect, it } from "@effect/vitest"
import { memoryVfs, ReadOnlySnapshot, snapshotVfs } from "../../../src/environments/vfs/Vfs.js"

const text = (value: string) => new TextEncoder().encode(value)

describe("memoryVfs", () => {
  const tree = () => memoryVfs(new Map([["/inbox/a.csv", text("x,y\n")], ["/inbox/deep/b.txt", text("hello")], ["/top.md", text("#")]]))

  it("lists direct children with implied directories, and everything below when recursive", () => {
    const vfs = tree()
    expect(vfs.list("/")).toEqual([
      { path: "/inbox", kind: "directory", size: 9 },
      { path: "/top.md", kind: "file", size: 1 }
    ])
    expect(vfs.list("/inbox", { recursive: true }).map((entry) => `${entry.kind}:${entry.path}`)).toEqual([
      "file:/inbox/a.csv", "directory:/inbox/deep", "file:/inbox/deep/b.txt"
    ])
    expect(vfs.list("/missing")).toEqual([])
  })

  it("lists a file path as that file's own entry, recursive or not (ls of a file shows the file)", () => {
    const vfs = tree()
    expect(vfs.list("/inbox/a.csv")).toEqual([{ path: "/inbox/a.csv", kind: "file", size: 4 }])
    expect(vfs.list("/inbox/a.csv", { recursive: true })).toEqual([{ path: "/inbox/a.csv", kind: "file", size: 4 }])
    expect(snapshotVfs(new Map([["/a", text("abc")]])).list("/a")).toEqual([{ path: "/a", kind: "file", size: 3 }])
    // A prefix of a file's name is neither the file nor a folder.
    expect(vfs.list("/inbox/a.cs")).toEqual([])
  })

  it("knows files and implied directories exist, and keeps the total", () => {
    const vfs = tree()
    expect(vfs.exists("/inbox/deep")).toBe(true)
    expect(vfs.exists("/inbox/de")).toBe(false)
    expect(vfs.totalBytes()).toBe(10)
    vfs.put("/tmp/x", text("12345"))
    vfs.delete("/inbox")
    expect(vfs.totalBytes()).toBe(6)
    expect([...vfs.files().keys()]).toEqual(["/top.md", "/tmp/x"])
  })

  it("hands out a tree value later writes do not change", () => {
    const vfs = tree()
    const before = vfs.files()
    vfs.put("/new", text("n"))
    expect(before.has("/new")).toBe(false)
  })
})

describe("snapshotVfs", () => {
  it("reads a stored version and refuses to change it", () => {
    const vfs = snapshotVfs(new Map([["/a", text("a")]]))
    expect(vfs.read("/a")).toEqual(text("a"))
    expect(() => vfs.put("/a", text("b"))).toThrow(ReadOnlySnapshot)
    expect(() => vfs.delete("/a")).toThrow(ReadOnlySnapshot)
    expect(vfs.read("/a")).toEqual(text("a"))
  })
})
