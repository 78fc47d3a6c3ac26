/**
 * A release as `foundry deploy` sends it: `release.json` and every bundled file in base64. The
 * server takes it only whole and intact: the files are exactly those `release.json` lists, each
 * at a plain relative path, and they hash to the release's id, so that an id always names the
 * same code (which is what lets a store keep one copy per id, and a run pinned to an id resume
 * on exactly that code).
 */
import { Effect, Either, Encoding, Schema } from "effect"
import { migrations } from "../durable/migrations.js"
import { type HashedFile, releaseIdOf } from "./contentHash.js"
import { releasePath } from "./releaseCache.js"
import { ReleaseInvalid } from "./releaseErrors.js"
import { releaseFile, ReleaseManifest } from "./ReleaseManifest.js"

/** The body of `POST /api/releases`. */
export const ReleaseUpload = Schema.Struct({
  /** `release.json`, as `foundry build` wrote it. */
  manifest: Schema.Unknown,
  /** Every file `release.json` lists, in base64, by its path in the release. */
  files: Schema.Record({ key: Schema.String, value: Schema.String }),
  /** Check the release and say what would change, without keeping it or switching to it. */
  dryRun: Schema.optional(Schema.Boolean)
})
export type ReleaseUpload = typeof ReleaseUpload.Type

/** An upload found whole and intact: its manifest (and its text, kept as stored) and its files. */
export interface VerifiedRelease {
  readonly manifest: ReleaseManifest
  readonly manifestText: string
  /** Sorted by path, as the id hashes them. */
  readonly files: ReadonlyArray<HashedFile>
}

const decodeManifest = Schema.decodeUnknownEither(ReleaseManifest)
const encodeManifest = Schema.encodeSync(Schema.parseJson(ReleaseManifest, { space: 2 }))

const invalid = (message: string) => new ReleaseInvalid({ message })

/** Checks an upload; what is wrong with it is a `ReleaseInvalid` that says what to do. */
/** The most bytes a file system takes in one name (ext4, APFS, NTFS alike). */
const maxNameBytes = 255

/**
 * Why `files` cannot all be written as a folder, if they cannot: a path that is another's folder
 * (`a` and `a/b`), or a name too long for a file system. Refused with the others' reasons rather
 * than failing the write halfway.
 */
const unwritablePaths = (files: ReadonlyArray<string>): string | undefined => {
  const folders = new Set(files.flatMap((file) => {
    const segments = file.split("/")
    return segments.slice(1).map((_, i) => segments.slice(0, i + 1).join("/"))
  }))
  const both = files.filter((file) => folders.has(file))
  if (both.length > 0) return `files whose paths are also folders of other files: ${both.join(", ")}`
  const long = files.filter((file) => file.split("/").some((name) => Buffer.byteLength(name) > maxNameBytes))
  if (long.length > 0) return `files with a name over ${maxNameBytes} bytes, which file systems refuse: ${long.join(", ")}`
  return undefined
}

export const verifyUpload = Effect.fn("release.verifyUpload")(function*(upload: ReleaseUpload) {
  const decoded = decodeManifest(upload.manifest)
  if (Either.isLeft(decoded)) {
    return yield* invalid(`manifest is not a release.json: ${decoded.left.message}\n  fix: send the release.json \`foundry build\` wrote, as it is`)
  }
  const manifest = decoded.right
  const listed = new Set(manifest.files)
  const sent = Object.keys(upload.files)
  // Own keys only: `constructor` or `__proto__` listed and not sent is missing, not found on the object's prototype.
  const missing = manifest.files.filter((file) => !Object.hasOwn(upload.files, file))
  const extra = sent.filter((file) => !listed.has(file))
  if (missing.length > 0 || extra.length > 0) {
    return yield* invalid(
      [
        ...(missing.length > 0 ? [`files missing that release.json lists: ${missing.join(", ")}`] : []),
        ...(extra.length > 0 ? [`files sent that release.json does not list: ${extra.join(", ")}`] : [])
      ].join("; ") + "\n  fix: send every file of the release folder that release.json lists, and no other"
    )
  }
  const unsafe = sent.filter((file) => !releasePath(file) || file === releaseFile)
  if (unsafe.length > 0) return yield* invalid(`files with paths a release cannot have: ${unsafe.join(", ")}`)
  const unwritable = unwritablePaths(sent)
  if (unwritable !== undefined) return yield* invalid(unwritable)
  const files: Array<HashedFile> = []
  for (const file of [...sent].sort()) {
    const content = Encoding.decodeBase64(upload.files[file] ?? "")
    if (Either.isLeft(content)) return yield* invalid(`${file}: its content is not base64`)
    files.push({ file, content: content.right })
  }
  const hashed = releaseIdOf(files)
  if (hashed !== manifest.id) {
    return yield* invalid(
      `the files hash to ${hashed}, not to the release's id ${manifest.id}: the release changed after it was built\n` +
        "  fix: build it again with `foundry build` (or `foundry deploy`, which builds)"
    )
  }
  const known = new Set(Object.keys(migrations))
  const unknown = manifest.migrations.filter((migration) => !known.has(migration))
  if (unknown.length > 0) {
    return yield* invalid(
      `${manifest.id} was built by Foundry ${manifest.foundryVersion}, whose store has migrations this server does not know ` +
        `(${unknown.join(", ")})\n  fix: upgrade the server's Foundry to ${manifest.foundryVersion} or later, or build with this server's version`
    )
  }
  return { manifest, manifestText: `${encodeManifest(manifest)}\n`, files } satisfies VerifiedRelease
})
