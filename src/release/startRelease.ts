/**
 * Which release `foundry start` serves: the one named with `--release`, which becomes the store's
 * current release (deployed by "start") unless the store had it before and a later deploy made
 * another current (then that one, with a warning); otherwise the store's current release, when
 * anything was ever deployed to it; otherwise the project it was started on.
 */
import { join } from "node:path"
import { FileSystem } from "@effect/platform"
import { Clock, DateTime, Effect, Encoding, Option } from "effect"
import type { CompiledApp } from "../compiler/CompiledApp.js"
import type { StoreError } from "../durable/StoreError.js"
import { CurrentMoved, ReleaseInvalid, type ReleaseNotFound } from "./releaseErrors.js"
import { readReleaseFolder } from "./releaseFolder.js"
import { decodeManifestText, releaseFile, releaseIdAt } from "./ReleaseManifest.js"
import type { ReleaseStorage } from "./ReleaseStorage.js"
import { configOfManifest, routeDigests, routesOfManifest, routesOfTable, summarize } from "./releaseSummary.js"

/** What choosing the release needs from `Releases`. */
export interface StartOptions<E, R> {
  readonly storage: ReleaseStorage["Type"]
  /** The build `foundry start` made of the folder it was given. */
  readonly first: CompiledApp
  /** The folder was named with `--release`. */
  readonly given: boolean
  /** The folder of a release, written from the store when needed. */
  readonly folderOf: (id: string) => Effect.Effect<string, E, R>
  readonly makeCurrent: (id: string) => Effect.Effect<CompiledApp, ReleaseNotFound | ReleaseInvalid | StoreError>
}

/** A release folder checked against its id, with its files in base64 as the store keeps them. */
const readRelease = (folder: string) =>
  Effect.map(readReleaseFolder(folder), ({ files, manifest, text }) => ({
    text,
    manifest,
    files: Object.fromEntries(files.map(({ content, file }) => [file, Encoding.encodeBase64(content)]))
  }))

/** The digests of the routes of the release kept in `folder`, as its manifest lists them. */
const storedDigests = (folder: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const manifest = yield* decodeManifestText(yield* fs.readFileString(join(folder, releaseFile)))
    return routeDigests(folder, routesOfManifest(manifest.manifest), configOfManifest(manifest.manifest), manifest.sources)
  })

/**
 * The release `foundry start` serves, made current first when it is the folder given with
 * `--release`: decided against the store's current release, and decided again when another
 * deploy makes another current before the switch commits (its summary and its log's previous
 * release are that one's, and the folder's release may have been superseded meanwhile).
 */
const chooseRelease = <E, R>(options: StartOptions<E, R>, release: ReturnType<typeof readRelease>) =>
  Effect.gen(function*() {
    const { first, storage } = options
    const stored = yield* storage.current
    // A release the store has had, with another current since: a deploy came after it. A restart of
    // an old image (a container, a runner of a cluster) must not undo that for every process.
    const superseded = options.given && Option.isSome(stored) && stored.value !== first.release && (yield* storage.has(first.release))
    if (superseded) {
      yield* Effect.logWarning(
        `--release ${first.release} was current before, and ${Option.getOrElse(stored, () => "")} was deployed since: serving that, the store's current release. ` +
          `To go back to ${first.release}, run \`foundry rollback ${first.release}\``
      )
    }
    if (!options.given || superseded) return { id: Option.getOrElse(stored, () => first.release), fromStore: true }
    // The folder given is served: checked against its id even when the store has that release
    // current already (a folder changed since its build must not be served under the id).
    const { files, manifest, text } = yield* release
    if (Option.contains(stored, first.release)) return { id: first.release, fromStore: true }
    const before = Option.isNone(stored)
      ? undefined
      : yield* options.folderOf(stored.value).pipe(Effect.flatMap(storedDigests), Effect.orElseSucceed(() => undefined))
    const made = yield* storage.activate({
      id: first.release,
      deployedAt: yield* Clock.currentTimeMillis,
      action: "start",
      deployedBy: "start",
      summary: summarize(before, routeDigests(first.table.root, routesOfTable(first.table), first.table.configFile, manifest.sources)),
      content: { createdAt: DateTime.toEpochMillis(manifest.createdAt), manifest: text, files },
      expected: stored
    })
    if (!made) return yield* new CurrentMoved()
    return { id: first.release, fromStore: false }
  })

/** Makes the release `foundry start` serves current. */
export const startRelease = Effect.fn("release.start")(function*<E, R>(options: StartOptions<E, R>) {
  // The folder is read and hashed once, however many times the choice is made.
  const root = options.first.table.root
  const release = yield* Effect.cached(readRelease(root))
  // A release folder is checked whether or not it was named with `--release`: `foundry start
  // <folder>` builds and may serve it under its id all the same, and its config is the server's.
  if (releaseIdAt(root) !== undefined) yield* release
  const chosen = yield* chooseRelease(options, release).pipe(
    Effect.retry({ while: (error) => error instanceof CurrentMoved, times: 5 }),
    // Five deploys in a row, each between this start's decision and its switch: not a rate anyone deploys at.
    Effect.catchIf((error) => error instanceof CurrentMoved, (moved) => Effect.die(moved))
  )
  if (!chosen.fromStore) return yield* options.makeCurrent(chosen.id)
  return yield* options.makeCurrent(chosen.id).pipe(
    Effect.mapError((error) =>
      new ReleaseInvalid({
        message: `the store's current release cannot be served: ${error.message}\n` +
          "  fix: start a release folder with `foundry start --release <folder>`, which becomes the current release"
      })
    )
  )
})
