/**
 * Releases as folders a server loads: `<project>/.foundry/release-cache/<id>/`, a release's
 * `release.json` and bundled files written from an upload or from the store. A folder is written
 * beside its place and renamed into it whole, so a folder named by an id is always complete, and
 * an id names one content, so a folder once written is never written again.
 */
import { randomUUID } from "node:crypto"
import { dirname, join } from "node:path"
import { FileSystem } from "@effect/platform"
import { Effect } from "effect"
import { forgetBundles } from "../router/RouteModuleLoader.js"
import type { HashedFile } from "./contentHash.js"
import { releaseFile } from "./ReleaseManifest.js"

/**
 * Whether `file` is a path a release may hold: relative, of names (an environment's folder may
 * hold any file name): no `.` or `..` segment, no control characters or backslashes, nothing in
 * the release's own `.foundry/` state. Checked where an upload comes in, and again wherever a
 * release's files are written or read by their listed paths (from the store, from a folder).
 */
export const releasePath = (file: string): boolean => {
  const segments = file.split("/")
  return segments[0] !== ".foundry" && !/[\u0000-\u001f\u007f\\]/.test(file) &&
    segments.every((segment) => segment !== "" && segment !== "." && segment !== "..")
}

/** Where the server with its project at `root` keeps the releases it loads. */
export const releaseCacheFolder = (root: string): string => join(root, ".foundry/release-cache")

/** The folder of release `id`, when it is already written. */
export const cachedRelease = Effect.fn("release.cached")(function*(root: string, id: string) {
  const fs = yield* FileSystem.FileSystem
  const folder = join(releaseCacheFolder(root), id)
  return (yield* fs.exists(join(folder, releaseFile))) ? folder : undefined
})

/**
 * Writes release `id` (its `release.json` text and files) as `<parent>/<id>/`, unless it is there
 * complete already: written beside its place and renamed into it whole. Its folder.
 */
export const writeReleaseFolder = Effect.fn("release.writeFolder")(function*(
  parent: string,
  id: string,
  manifestText: string,
  files: Iterable<HashedFile>
) {
  const fs = yield* FileSystem.FileSystem
  const listed = [...files]
  const outside = listed.find(({ file }) => !releasePath(file))
  // Only a store written by something else than Foundry holds one: nothing is written for it.
  if (outside !== undefined) return yield* Effect.dieMessage(`release ${id} lists a file at ${JSON.stringify(outside.file)}, which no release can hold`)
  const folder = join(parent, id)
  const complete = fs.exists(join(folder, releaseFile))
  if (yield* complete) return folder
  const staging = join(parent, `.${id}-${randomUUID()}`)
  yield* Effect.gen(function*() {
    for (const { content, file } of listed) {
      yield* fs.makeDirectory(dirname(join(staging, file)), { recursive: true })
      yield* fs.writeFile(join(staging, file), content)
    }
    yield* fs.writeFileString(join(staging, releaseFile), manifestText)
    // Another writer that put the same release in place meanwhile put the same content there: kept.
    const placed = Effect.catchAll(fs.rename(staging, folder), (error) => Effect.flatMap(complete, (done) => done ? Effect.void : Effect.fail(error)))
    // Renamed onto a folder that is there already, it fails: a whole release (another writer's, which
    // may be loading now) stays; one without its release.json is no release, and is replaced.
    yield* placed.pipe(Effect.catchAll(() =>
      Effect.flatMap(complete, (done) => done ? Effect.void : Effect.zipRight(fs.remove(folder, { recursive: true, force: true }), placed))
    ))
  }).pipe(Effect.ensuring(Effect.ignore(fs.remove(staging, { recursive: true, force: true }))))
  return folder
})

/** Writes release `id` into the cache of the server with its project at `root`, unless it is there; its folder. */
export const materialise = (root: string, id: string, manifestText: string, files: Iterable<HashedFile>) =>
  writeReleaseFolder(releaseCacheFolder(root), id, manifestText, files)

/**
 * Removes release `id` from the cache of the server with its project at `root` (a release it never
 * kept), with the bundles this process made of it, which were in its folder: a deploy of it later
 * bundles it again rather than import files that are gone.
 */
export const forget = Effect.fn("release.forget")(function*(root: string, id: string) {
  const fs = yield* FileSystem.FileSystem
  const folder = join(releaseCacheFolder(root), id)
  yield* fs.remove(folder, { recursive: true, force: true })
  yield* Effect.sync(() => forgetBundles(folder))
})
