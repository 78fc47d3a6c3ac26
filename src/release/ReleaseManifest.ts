/**
 * `release.json`: what makes a folder a release. `foundry build` writes it beside the bundled route
 * files; its `id` is the release every event of a server on that folder carries.
 */
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { Option, Schema } from "effect"

/** A release id: `rel_` and the first 12 hex digits of the hash of the release's bundled files. */
export const ReleaseId = Schema.String.pipe(Schema.pattern(/^rel_[0-9a-f]{12}$/), Schema.brand("ReleaseId"))

/** A release id, as `ReleaseId` decodes it. */
export type ReleaseId = typeof ReleaseId.Type

/** The name of the file that describes a release, at the top of its folder. */
export const releaseFile = "release.json"

/** The content of `release.json`. */
export class ReleaseManifest extends Schema.Class<ReleaseManifest>("ReleaseManifest")({
  id: ReleaseId,
  createdAt: Schema.DateTimeUtc,
  /** The version of the framework that built it; the server that runs it provides `foundry` and `effect`. */
  foundryVersion: Schema.String,
  /** The project's `.foundry/manifest.json` as the build generated it (routes by their source files). */
  manifest: Schema.Unknown,
  /** The store's migrations the framework that built it knows, oldest first. */
  migrations: Schema.Array(Schema.String),
  /** The bundled files, relative to the release folder, sorted: what the id hashes. */
  files: Schema.Array(Schema.String),
  /**
   * The digest of the sources each route file and the config were bundled from, keyed by file
   * without its extension: what a deploy's summary compares. Releases built before it have none.
   */
  sources: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String }))
}) {}

/** A `release.json` text as its manifest. */
export const decodeManifestText = Schema.decode(Schema.parseJson(ReleaseManifest))

const decodeId = Schema.decodeUnknownOption(Schema.parseJson(Schema.Struct({ id: ReleaseId })))

/** The id in `<folder>/release.json`, when the folder is a release. */
export const releaseIdAt = (folder: string): ReleaseId | undefined => {
  const file = join(folder, releaseFile)
  if (!existsSync(file)) return undefined
  return Option.getOrUndefined(Option.map(decodeId(readFileSync(file, "utf8")), (release) => release.id))
}
