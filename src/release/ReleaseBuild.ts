/**
 * `foundry build`'s product: a release folder, `.foundry/releases/<id>/`, holding the project's
 * route files and config bundled as plain JavaScript, the folders its environments start from,
 * and `release.json` (id, time, framework version, manifest, migrations, files). The id hashes the
 * release's files, so the same sources build the same release, and building it again leaves the
 * folder as it is (a server may be running on it, with its store inside), unless it changed since
 * its build: its files are then written again where they are.
 */
import { dirname, join } from "node:path"
import { FileSystem } from "@effect/platform"
import { DateTime, Effect, Schema } from "effect"
import packageJson from "../../package.json" with { type: "json" }
import { migrations } from "../durable/migrations.js"
import { manifestOf } from "../router/codegen.js"
import type { RouteTable } from "../router/RouteTable.js"
import { bundleRelease, ReleaseBundleError, releaseEntries } from "./bundleRelease.js"
import { environmentFolderFiles } from "./environmentFolders.js"
import { type HashedFile, releaseIdOf } from "./contentHash.js"
import { writeReleaseFolder } from "./releaseCache.js"
import { ReleaseInvalid } from "./releaseErrors.js"
import { readReleaseFolder, unlistedRouteFiles } from "./releaseFolder.js"
import { ReleaseId, releaseFile, ReleaseManifest } from "./ReleaseManifest.js"

/** A built release: where it is, and whether this build wrote it or found it already built. */
export interface BuiltRelease {
  readonly id: ReleaseId
  readonly folder: string
  readonly fresh: boolean
  /** Why a folder of this release that was there already was written again: how it had changed since its build. */
  readonly rebuilt?: string
}

/** Where the releases of the project at `root` are kept. */
export const releasesFolder = (root: string): string => join(root, ".foundry/releases")

const encodeManifest = Schema.encode(Schema.parseJson(ReleaseManifest, { space: 2 }))

/** Bundles the project of a checked route table and writes its release, unless that release is already built. */
export const buildRelease = Effect.fn("release.build")(function*(table: RouteTable) {
  const fs = yield* FileSystem.FileSystem
  const { files: bundled, sources } = yield* bundleRelease(table.root, releaseEntries(table))
  const folders = yield* environmentFolderFiles(table)
  const code = new Set(bundled.map(({ file }) => file))
  const clashing = folders.filter(({ file }) => code.has(file) || file === releaseFile)
  if (clashing.length > 0) {
    return yield* new ReleaseBundleError({
      message: `an environment's folder holds files at the paths of the release's own: ${clashing.map(({ file }) => file).join(", ")}\n` +
        "  fix: keep environment folders apart from route files (a data/ folder, say)"
    })
  }
  const files = [...bundled, ...folders].sort((a, b) => a.file < b.file ? -1 : a.file > b.file ? 1 : 0)
  const id = ReleaseId.make(releaseIdOf(files))
  const folder = join(releasesFolder(table.root), id)
  // Built already, unless the folder changed since (a file edited, a route file added): every check of
  // a release folder then says to build it again, so that is what building it again must do.
  const built = yield* fs.exists(join(folder, releaseFile))
  const changed = built ? yield* changeSinceBuild(folder, id) : undefined
  if (built && changed === undefined) return { id, folder, fresh: false } satisfies BuiltRelease

  const manifest = new ReleaseManifest({
    id,
    createdAt: yield* DateTime.now,
    foundryVersion: packageJson.version,
    manifest: manifestOf(table),
    migrations: Object.keys(migrations),
    files: files.map(({ file }) => file),
    sources
  })
  const manifestText = `${yield* encodeManifest(manifest)}\n`
  if (changed === undefined) {
    yield* writeReleaseFolder(releasesFolder(table.root), id, manifestText, files)
    return { id, folder, fresh: true } satisfies BuiltRelease
  }
  yield* rewriteReleaseFolder(folder, manifestText, files)
  return { id, folder, fresh: true, rebuilt: changed } satisfies BuiltRelease
})

/** Why the release folder `folder` of release `id` is not that release any more; `undefined` when it is. */
const changeSinceBuild = (folder: string, id: string) =>
  readReleaseFolder(folder).pipe(
    Effect.map(({ manifest }) => manifest.id === id ? undefined : `its ${releaseFile} names ${manifest.id}`),
    Effect.catchAll((error) => Effect.succeed(error instanceof ReleaseInvalid ? error.message.split("\n")[0] : `its ${releaseFile} cannot be read (${error.message})`))
  )

/**
 * Writes a release's files over its folder where they are, and removes the route files it does not
 * list. Not replaced whole: a server may be running on the folder, with its store in `.foundry/`.
 */
const rewriteReleaseFolder = Effect.fn("release.rewriteFolder")(function*(folder: string, manifestText: string, files: ReadonlyArray<HashedFile>) {
  const fs = yield* FileSystem.FileSystem
  for (const { content, file } of files) {
    yield* fs.makeDirectory(dirname(join(folder, file)), { recursive: true })
    yield* fs.writeFile(join(folder, file), content)
  }
  for (const file of unlistedRouteFiles(folder, files.map(({ file }) => file))) yield* fs.remove(join(folder, file))
  yield* fs.writeFileString(join(folder, releaseFile), manifestText)
})
