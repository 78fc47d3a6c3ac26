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
import type { HashedFile } from "./contentHash.js"
import { releaseFile } from "./ReleaseManifest.js"

/** Where the server with its project at `root` keeps the releases it loads. */
export const releaseCacheFolder = (root: string): string => join(root, ".foundry/release-cache")

/** The folder of release `id`, when it is already written. */
export const cachedRelease = Effect.fn("release.cached")(function*(root: string, id: string) {
  const fs = yield* FileSystem.FileSystem
  const folder = join(releaseCacheFolder(root), id)
  return (yield* fs.exists(join(folder, releaseFile))) ? folder : undefined
})

/** Writes release `id` (its `release.json` text and files) into the cache, unless it is there; its folder. */
export const materialise = Effect.fn("release.materialise")(function*(
  root: string,
  id: string,
  manifestText: string,
  files: Iterable<HashedFile>
) {
  const fs = yield* FileSystem.FileSystem
  const found = yield* cachedRelease(root, id)
  if (found !== undefined) return found
  const folder = join(releaseCacheFolder(root), id)
  const staging = join(releaseCacheFolder(root), `.${id}-${randomUUID()}`)
  yield* Effect.gen(function*() {
    for (const { content, file } of files) {
      yield* fs.makeDirectory(dirname(join(staging, file)), { recursive: true })
      yield* fs.writeFile(join(staging, file), content)
    }
    yield* fs.writeFileString(join(staging, releaseFile), manifestText)
    yield* fs.rename(staging, folder).pipe(
      // Another load wrote the same release meanwhile: the same content is in place.
      Effect.catchAll((error) => Effect.flatMap(cachedRelease(root, id), (written) => written === undefined ? Effect.fail(error) : Effect.void))
    )
  }).pipe(Effect.ensuring(Effect.ignore(fs.remove(staging, { recursive: true, force: true }))))
  return folder
})
