/**
 * A cached release checked against its id before it is used: a folder in the release cache whose
 * files were changed since it was written, or that is not whole (a disk that lost part of it, a
 * copy stopped part way), would otherwise be served under the release's id. One that does not
 * match is removed, with a warning saying why, so that it is written again from a whole copy.
 */
import { Effect } from "effect"
import { cachedRelease, forget } from "./releaseCache.js"
import { readReleaseFolder } from "./releaseFolder.js"

/** What makes `folder` not release `id` (its files, its `release.json`), or `undefined` when it is exactly that release. */
export const cacheProblem = (folder: string, id: string) =>
  Effect.map(Effect.either(readReleaseFolder(folder)), (read) =>
    read._tag === "Left"
      // Its first line: the fix it gives (build it again) is not this reader's to do.
      ? read.left.message.split("\n")[0]
      : read.right.manifest.id === id ? undefined : `its release.json names ${read.right.manifest.id}`)

/**
 * The folder of release `id` in the cache of the server with its project at `root`, when it is
 * there and is exactly its release; `undefined` when it is not there, or was not its release and is
 * removed now (a disk that fails us is a defect).
 */
export const checkedCachedRelease = Effect.fn("release.checkedCached")(function*(root: string, id: string) {
  const folder = yield* Effect.orDie(cachedRelease(root, id))
  if (folder === undefined) return undefined
  const problem = yield* cacheProblem(folder, id)
  if (problem === undefined) return folder
  yield* Effect.logWarning(`the release cache's copy of ${id} is not that release, so it is written again from the store's copy: ${problem}`)
  yield* Effect.orDie(forget(root, id))
  return undefined
})
