/**
 * `foundry build`'s product: a release folder, `.foundry/releases/<id>/`, holding the project's
 * route files and config bundled as plain JavaScript, the folders its environments start from,
 * and `release.json` (id, time, framework version, manifest, migrations, files). The id hashes the
 * release's files, so the same sources build the same release, and building it again leaves the
 * folder as it is: a server may be running on it, with its store inside.
 */
import { join } from "node:path"
import { FileSystem } from "@effect/platform"
import { DateTime, Effect, Schema } from "effect"
import packageJson from "../../package.json" with { type: "json" }
import { migrations } from "../durable/migrations.js"
import { manifestOf } from "../router/codegen.js"
import type { RouteTable } from "../router/RouteTable.js"
import { bundleRelease, ReleaseBundleError, releaseEntries } from "./bundleRelease.js"
import { environmentFolderFiles } from "./environmentFolders.js"
import { releaseIdOf } from "./contentHash.js"
import { writeReleaseFolder } from "./releaseCache.js"
import { ReleaseId, releaseFile, ReleaseManifest } from "./ReleaseManifest.js"

/** A built release: where it is, and whether this build wrote it or found it already built. */
export interface BuiltRelease {
  readonly id: ReleaseId
  readonly folder: string
  readonly fresh: boolean
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
  if (yield* fs.exists(join(folder, releaseFile))) return { id, folder, fresh: false } satisfies BuiltRelease

  const manifest = new ReleaseManifest({
    id,
    createdAt: yield* DateTime.now,
    foundryVersion: packageJson.version,
    manifest: manifestOf(table),
    migrations: Object.keys(migrations),
    files: files.map(({ file }) => file),
    sources
  })
  yield* writeReleaseFolder(releasesFolder(table.root), id, `${yield* encodeManifest(manifest)}\n`, files)
  return { id, folder, fresh: true } satisfies BuiltRelease
})
