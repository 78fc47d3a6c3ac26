/**
 * Watches a project folder so that `foundry dev` rebuilds after every change to source the
 * project may import: routes, the config, and helpers anywhere in the folder (`lib/`, shared
 * modules). Debounced, so that one save or one `git checkout` (many events) causes one rebuild.
 *
 * Built on @parcel/watcher rather than Node's recursive `fs.watch`, which on Linux loses a file
 * once it has been replaced by rename (`sed -i`, editors' atomic saves, `git checkout`). Parcel
 * watches folders, so a rename over a file arrives as a `create` of that file.
 */
import { type Event as NativeEvent, getEventsSince, subscribe, writeSnapshot } from "@parcel/watcher"
import { mkdtempSync, readdirSync, realpathSync, rmSync, type Stats, statSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { Data, Duration, Effect, HashSet, Ref, Stream } from "effect"
import { isFolder, isIgnored, isSource } from "./projectSources.js"

/** Watching could not start or stopped; `message` names the folder and the reason. */
export class WatchError extends Data.TaggedError("WatchError")<{ readonly message: string }> {}

const defaultDebounce = Duration.millis(150)

/**
 * Parcel matches these against the path inside the watched folder, so a project that itself sits
 * under a dot-folder is still watched. Ignored folders are neither crawled nor given inotify
 * watches: `node_modules` alone can hold more folders than the per-user watch limit, and the
 * store's SQLite files and the generated files live in `.foundry/`. `isIgnored` is the same rule
 * again, so that what counts never rests on how parcel's native regex engine reads globs.
 */
const ignoreGlobs = ["**/node_modules", "**/.*"]

/** The project-relative POSIX path of `absolute`, unless it is the root itself, outside it, or ignored. */
const relativeTo = (root: string, absolute: string): string | undefined => {
  const file = path.relative(root, absolute).split(path.sep).join("/")
  return file === "" || file.startsWith("../") || isIgnored(file) ? undefined : file
}

/** The status of `absolute`, or none if it is gone (or a parent is now a file). */
const statusOf = (absolute: string): Stats | undefined => {
  try {
    return statSync(absolute)
  } catch {
    return undefined
  }
}

/** Every folder under `root` that is watched, as project-relative paths. */
const foldersUnder = (root: string): Set<string> => {
  const found = new Set<string>()
  const walk = (folder: string): void => {
    const entries = (() => {
      try {
        return readdirSync(path.join(root, folder), { withFileTypes: true })
      } catch {
        return [] // removed while we looked: nothing under it to remember
      }
    })()
    for (const entry of entries) {
      if (!entry.isDirectory() || isIgnored(entry.name)) continue
      const child = folder === "" ? entry.name : `${folder}/${entry.name}`
      found.add(child)
      walk(child)
    }
  }
  walk("")
  return found
}

/** What one batch of native events means: the changed paths, and whether a folder appeared. */
const classify = (root: string, folders: ReadonlySet<string>, events: ReadonlyArray<NativeEvent>) => {
  const changed: Array<string> = []
  let newFolder = false
  for (const event of events) {
    const file = relativeTo(root, event.path)
    if (file === undefined) continue
    if (isSource(file)) {
      changed.push(file)
    } else if (event.type === "create" && isFolder(event.path)) {
      // A folder moved or copied in, or created just before its files, is reported as the folder
      // alone: its files were written before anything watched it. The rebuild reads them anyway.
      changed.push(file)
      newFolder = true
    } else if (event.type === "delete" && folders.has(file)) {
      // A folder moved out (to the trash, say) is reported as the folder alone.
      changed.push(file)
    }
  }
  return { changed, newFolder }
}

const cannotWatch = (root: string, cause: unknown): WatchError => {
  const status = statusOf(root)
  const reason = status === undefined
    ? "the folder does not exist"
    : !status.isDirectory()
    ? "it is not a folder"
    : cause instanceof Error
    ? cause.message
    : String(cause)
  const hint = reason.includes("No space left on device")
    ? " (the inotify watch limit is reached: raise fs.inotify.max_user_watches, or watch fewer folders)"
    : ""
  return new WatchError({ message: `cannot watch ${root} for changes: ${reason}${hint}` })
}

/** Longer than parcel holds a change it has read before delivering it (500 ms at most). */
const handoverDelay = Duration.seconds(1)

/**
 * Where the tree stood when a subscription ended for a new folder: the next one reports what
 * changed since, once it is live.
 */
interface Handover {
  readonly file: string
  taken: boolean
}

/**
 * One parcel subscription, emitting the changed paths of each batch, that ends after a batch in
 * which a folder appeared. On Linux parcel watches a new folder but not the folders already
 * inside it (`mkdir -p`, a folder tree moved in, `git checkout`; parcel-bundler/watcher#97), so
 * the caller subscribes again, and the new subscription crawls and watches the whole tree. Nothing
 * watches while it crawls, which takes as long as the tree is large, and a checkout writes on
 * meanwhile: so the ending subscription writes a snapshot of the tree first, and the next one,
 * once live, reports what changed since it (parcel's `getEventsSince`). The snapshot is of the
 * tree parcel keeps, which takes in a change before the change is delivered (parcel holds changes
 * for up to half a second to batch them), so the ending subscription lives on for `handoverDelay`
 * after it, to deliver what the snapshot holds. Parcel keeps one folder tree per watched path while
 * any subscription to it lives, so the crawl happens only if nothing else in the process watches
 * `root` with parcel (nothing in Foundry does).
 */
const subscription = (root: string, handover: Handover): Stream.Stream<ReadonlyArray<string>> =>
  Stream.asyncScoped<ReadonlyArray<string>>((emit) =>
    Effect.gen(function*() {
      // Taken before subscribing: a folder deleted once we are subscribed was there to be seen.
      const folders = foldersUnder(root)
      let ending = false
      const onEvents = (error: Error | null, events: ReadonlyArray<NativeEvent>): void => {
        if (error !== null) {
          void emit.die(new WatchError({ message: `stopped watching ${root} for changes: ${error.message}` }))
          return
        }
        const { changed, newFolder } = classify(root, folders, events)
        if (changed.length > 0) void emit.single(changed)
        if (!newFolder || ending) return
        ending = true
        writeSnapshot(root, handover.file, { ignore: ignoreGlobs }).then(
          () => {
            handover.taken = true
            setTimeout(() => void emit.end(), Duration.toMillis(handoverDelay))
          },
          (cause: unknown) => void emit.die(new WatchError({ message: `stopped watching ${root} for changes: ${String(cause)}` }))
        )
      }
      yield* Effect.acquireRelease(
        Effect.tryPromise({
          try: () => subscribe(root, onEvents, { ignore: ignoreGlobs }),
          catch: (cause) => cannotWatch(root, cause)
        }),
        // The stream ends either way; a watch that fails to close goes with the process.
        (watching) => Effect.tryPromise(() => watching.unsubscribe()).pipe(Effect.ignore)
      )
      if (!handover.taken) return
      handover.taken = false
      const missed = yield* Effect.tryPromise({
        try: () => getEventsSince(root, handover.file, { ignore: ignoreGlobs }),
        catch: (cause) => cannotWatch(root, cause)
      })
      // A folder made meanwhile was crawled with the rest: this subscription watches it.
      const { changed } = classify(root, folders, missed)
      if (changed.length > 0) void emit.single(changed)
    }).pipe(
      // The stream promises no failure, since its caller forks it and rebuilds forever, so a
      // watcher that cannot start or stops dies with a `WatchError` naming the folder and the
      // reason. Ending quietly instead would leave `foundry dev` serving stale builds while
      // looking healthy; whoever runs the stream should report its cause.
      Effect.orDie
    )
  )

/**
 * The project-relative paths (POSIX, sorted) changed in each settled burst under `root`: one
 * element once no change has come for `debounce`.
 */
export const watchProjectChanges = (
  root: string,
  debounce: Duration.DurationInput = defaultDebounce
): Stream.Stream<ReadonlyArray<string>> =>
  Stream.unwrapScoped(
    Effect.gen(function*() {
      // On macOS parcel reports real paths (`/private/var/...` for `/var/...`), and on Linux the
      // paths under the folder it was given: the real path matches both.
      const absolute = yield* Effect.sync(() => {
        try {
          return realpathSync(root)
        } catch {
          return path.resolve(root) // missing: subscribing fails and says so
        }
      })
      // `Stream.debounce` keeps only the last element of a burst, so the burst's paths collect here.
      const pending = yield* Ref.make(HashSet.empty<string>())
      const snapshots = yield* Effect.acquireRelease(
        Effect.sync(() => mkdtempSync(path.join(tmpdir(), "foundry-watch-"))),
        (folder) => Effect.sync(() => rmSync(folder, { recursive: true, force: true }))
      )
      const handover: Handover = { file: path.join(snapshots, "tree"), taken: false }
      return Stream.forever(subscription(absolute, handover)).pipe(
        Stream.tap((changed) => Ref.update(pending, HashSet.union(changed))),
        Stream.debounce(debounce),
        Stream.mapEffect(() => Ref.getAndSet(pending, HashSet.empty())),
        Stream.map((changed) => Array.from(changed).sort()),
        // Paths that came after the debounce fired joined that element; the element their own
        // debounce produces is empty.
        Stream.filter((changed) => changed.length > 0)
      )
    })
  )
