/**
 * The folders environments start from (`backend: { directory }`), as files of the release: a
 * server has the release's folder and nothing else of the project, so an environment's folder
 * travels with the code that names it, at the same relative path, and hashes into the release's id.
 */
import { isAbsolute, relative, resolve } from "node:path"
import { Effect } from "effect"
import { directoryVfs } from "../environments/vfs/directoryVfs.js"
import type { RouteTable } from "../router/RouteTable.js"
import type { HashedFile } from "./contentHash.js"
import { ReleaseBundleError } from "./bundleRelease.js"

/** Every file of the project's environment folders, by its path in the project; an absolute folder is the server's own and is not carried. */
export const environmentFolderFiles = Effect.fn("release.environmentFolders")(function*(table: RouteTable) {
  const files = new Map<string, Uint8Array>()
  for (const route of table.environments) {
    const backend = route.definition.backend
    if (backend._tag !== "Directory" || isAbsolute(backend.path)) continue
    const folder = relative(table.root, resolve(table.root, backend.path))
    if (folder === "" || folder.startsWith("..")) {
      return yield* new ReleaseBundleError({
        message: `${route.file}: backend.directory "${backend.path}" is ${folder === "" ? "the project folder itself" : "outside the project folder"}, ` +
          "and a release carries only the project's own folders\n  fix: move the folder into the project, or give an absolute path that the server has"
      })
    }
    const tree = yield* Effect.try({
      try: () => directoryVfs(resolve(table.root, folder)).files(),
      catch: (error) => new ReleaseBundleError({ message: `${route.file}: ${error instanceof Error ? error.message : String(error)}` })
    })
    for (const [path, content] of tree) files.set(`${folder.split("\\").join("/")}${path}`, content)
  }
  return [...files].map(([file, content]): HashedFile => ({ file, content }))
})
