/**
 * A release folder read against its `release.json`: the files it lists, which must hash to its id,
 * and no route file or config it does not list. A folder that is not exactly its release is
 * refused, as the server would otherwise serve other code under the release's id: a listed file
 * edited after the build, or a route file left there by an older release copied over
 * (`cp -r rel_new/. /srv/app` keeps the agents the new release removed, and discovery loads every
 * route file it finds).
 */
import { existsSync } from "node:fs"
import { join } from "node:path"
import { FileSystem } from "@effect/platform"
import { Effect } from "effect"
import { configFiles, listRouteFiles, routeFilesOf } from "../router/RoutePath.js"
import { type HashedFile, releaseIdOf } from "./contentHash.js"
import { releasePath } from "./releaseCache.js"
import { ReleaseInvalid } from "./releaseErrors.js"
import { decodeManifestText, releaseFile } from "./ReleaseManifest.js"

/** The route files and config files in `folder` that `listed` does not name: what discovery would load beside the release. */
export const unlistedRouteFiles = (folder: string, listed: ReadonlyArray<string>): ReadonlyArray<string> => {
  const known = new Set(listed)
  const found = routeFilesOf(listRouteFiles(folder))
  const routeFiles = [...found.routes.map((route) => route.file), ...found.problems.map((problem) => problem.file)]
  const configs = configFiles.filter((file) => existsSync(join(folder, file)))
  return [...new Set([...routeFiles, ...configs])].filter((file) => !known.has(file)).sort()
}

/** A release folder's `release.json` text, its manifest, and its files; refused unless the folder is exactly its release. */
export const readReleaseFolder = Effect.fn("release.readFolder")(function*(folder: string) {
  const fs = yield* FileSystem.FileSystem
  const text = yield* fs.readFileString(join(folder, releaseFile))
  const manifest = yield* decodeManifestText(text)
  const outside = manifest.files.find((file) => !releasePath(file))
  if (outside !== undefined) {
    return yield* new ReleaseInvalid({
      message: `${join(folder, releaseFile)} lists ${JSON.stringify(outside)}, which is no path in a release folder\n  fix: build the release again with \`foundry build\``
    })
  }
  const unlisted = unlistedRouteFiles(folder, manifest.files)
  if (unlisted.length > 0) {
    return yield* new ReleaseInvalid({
      message: `${folder} holds route files that release ${manifest.id} does not have (its ${releaseFile} does not list them), ` +
        `which would be served under its id: ${unlisted.join(", ")}\n` +
        "  fix: copy the release into an empty folder (a release copied over an older one keeps the files the new one removed), " +
        "or remove those files"
    })
  }
  const changed = (why: string) =>
    new ReleaseInvalid({ message: `${folder} changed after it was built: ${why}\n  fix: build the release again with \`foundry build\`` })
  const files = yield* Effect.forEach(manifest.files, (file) =>
    fs.readFile(join(folder, file)).pipe(
      Effect.map((content): HashedFile => ({ file, content })),
      // A listed file removed (or made unreadable) is a folder changed like an edited one.
      Effect.mapError((error) => changed(`${file}, which its ${releaseFile} lists, cannot be read (${error.message})`))
    ))
  if (releaseIdOf(files) !== manifest.id) return yield* changed(`its files no longer hash to ${manifest.id}`)
  return { text, manifest, files }
})
