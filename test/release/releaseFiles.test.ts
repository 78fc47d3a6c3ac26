/**
 * A release's files are only ever paths inside its folder: checked as an upload comes in, and again
 * where a release is written from what is listed (the store's copy) or read by what its
 * `release.json` lists (`foundry start --release`).
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { FileSystem } from "@effect/platform"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Either, Exit, Option } from "effect"
import { loadProject } from "../../src/compiler/loadProject.js"
import { writeReleaseFolder } from "../../src/release/releaseCache.js"
import { releaseFile } from "../../src/release/ReleaseManifest.js"
import { verifyUpload } from "../../src/release/ReleaseUpload.js"
import { startRelease } from "../../src/release/startRelease.js"
import { ReleaseStorage } from "../../src/release/ReleaseStorage.js"
import { deskReleases, uploadOf } from "./deploySupport.js"

describe("a release's files", () => {
  it.effect("an upload whose release.json lists a name its files object only inherits (constructor) is missing that file", () =>
    Effect.gen(function*() {
      const { v1 } = yield* deskReleases
      const upload = uploadOf(v1.folder)
      const verified = yield* Effect.either(verifyUpload({ ...upload, manifest: { ...upload.manifest, files: [...upload.manifest.files, "constructor"] } }))
      expect(Either.getLeft(verified)).toEqual(Option.some(expect.objectContaining({ message: expect.stringContaining("files missing that release.json lists: constructor") })))
    }))

  it.scoped("a release written from a list with a path out of its folder writes nothing", () =>
    Effect.gen(function*() {
      const parent = join(mkdtempSync(join(tmpdir(), "foundry-release-files-")), "cache")
      const written = yield* Effect.exit(
        writeReleaseFolder(parent, "rel_000000000000", "{}", [{ file: "../escaped.txt", content: new TextEncoder().encode("x") }])
      )
      expect(Exit.isFailure(written) ? Cause.pretty(written.cause) : "written").toContain("which no release can hold")
      expect(existsSync(join(parent, "escaped.txt"))).toBe(false)
      expect(existsSync(join(parent, "..", "escaped.txt"))).toBe(false)
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a release another writer put in place after this one looked is kept as it is, not removed to put this one's copy there", () =>
    Effect.gen(function*() {
      const parent = mkdtempSync(join(tmpdir(), "foundry-release-files-"))
      const folder = join(parent, "rel_000000000001")
      // The other writer's whole release, there by the time this one renames its copy into place.
      mkdirSync(folder)
      writeFileSync(join(folder, releaseFile), "{}")
      writeFileSync(join(folder, "marker"), "the other writer's")
      const fs = yield* FileSystem.FileSystem
      let looked = false
      // This writer looked before the other's was there.
      const lateFs = FileSystem.FileSystem.of({
        ...fs,
        exists: (path) =>
          Effect.suspend(() => {
            if (looked) return fs.exists(path)
            looked = true
            return Effect.succeed(false)
          })
      })
      const written = yield* writeReleaseFolder(parent, "rel_000000000001", "{}", [{ file: "a.js", content: new TextEncoder().encode("x") }]).pipe(
        Effect.provideService(FileSystem.FileSystem, lateFs)
      )
      expect(written).toBe(folder)
      expect(readFileSync(join(folder, "marker"), "utf8")).toBe("the other writer's")
      // Its staging copy is gone.
      expect(readdirSync(parent)).toEqual(["rel_000000000001"])
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a folder in a release's place without its release.json (a write cut short) is replaced by the whole release", () =>
    Effect.gen(function*() {
      const parent = mkdtempSync(join(tmpdir(), "foundry-release-files-"))
      const folder = join(parent, "rel_000000000002")
      mkdirSync(folder)
      writeFileSync(join(folder, "half.js"), "cut short")
      yield* writeReleaseFolder(parent, "rel_000000000002", "{}", [{ file: "a.js", content: new TextEncoder().encode("x") }])
      expect(readdirSync(folder).sort()).toEqual(["a.js", releaseFile])
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("foundry start --release with a release.json that lists a path out of its folder is refused before reading it", () =>
    Effect.gen(function*() {
      const { v1 } = yield* deskReleases
      const root = mkdtempSync(join(tmpdir(), "foundry-release-files-"))
      const folder = join(root, v1.id)
      cpSync(v1.folder, folder, { recursive: true })
      const manifest = JSON.parse(readFileSync(join(folder, releaseFile), "utf8")) as { files: Array<string> }
      writeFileSync(join(folder, releaseFile), JSON.stringify({ ...manifest, files: [...manifest.files, "../outside.txt"] }))
      writeFileSync(join(root, "outside.txt"), "not the release's")
      const first = yield* loadProject(folder, 1)
      const noStore = ReleaseStorage.of({
        activate: () => Effect.succeed(true),
        history: () => Effect.succeed([]),
        current: Effect.succeedNone,
        content: () => Effect.succeedNone,
        has: () => Effect.succeed(false),
        list: Effect.succeed([]),
        hasRunsGoingOn: () => Effect.succeed(false)
      })
      const started = yield* Effect.either(startRelease({ storage: noStore, first, given: true, folderOf: () => Effect.succeed(folder), makeCurrent: () => Effect.succeed(first) }))
      expect(Either.getLeft(started)).toEqual(Option.some(expect.objectContaining({ _tag: "ReleaseInvalid", message: expect.stringContaining("which is no path in a release folder") })))
    }).pipe(Effect.provide(NodeContext.layer)))
})
