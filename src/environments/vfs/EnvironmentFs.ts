/**
 * The one mutation gateway: every verb, every script's `env:fs` call and every adapter changes an
 * environment's files through here, so read-only zones and byte limits hold whoever asks. A
 * change is planned first (files to delete, files to put), checked whole (zones, structure,
 * limits) and only then applied, so a refused change leaves nothing behind. Every error carries a
 * message written for a model: what was refused, and what to do instead.
 */
import { Data, Either } from "effect"
import { formatBytes } from "./formatBytes.js"
import { generatedPaths } from "./generatedDocs.js"
import { ancestorsOf, baseName, childOf, InvalidPath, isWithin, isZone, normalizePath, parentOf } from "./paths.js"
import type { Vfs } from "./Vfs.js"

/** How large one file, and the whole tree, may grow. */
export interface FsLimits {
  readonly maxFileBytes: number
  readonly maxTotalBytes: number
}

/** A change inside a read-only zone (or one that would take a read-only file with it). */
export class ReadOnlyZone extends Data.TaggedError("ReadOnlyZone")<{ readonly path: string; readonly zone: string; readonly message: string }> {}

/** A change that would make a file, or the tree, larger than its limit; nothing was changed. */
export class LimitExceeded extends Data.TaggedError("LimitExceeded")<{
  readonly path: string
  readonly limit: "maxFileBytes" | "maxTotalBytes"
  readonly bytes: number
  readonly max: number
  readonly message: string
}> {}

/** Nothing at that path. */
export class NotFound extends Data.TaggedError("NotFound")<{ readonly path: string; readonly message: string }> {}

/** A directory where a file was expected, or a file where a directory was expected. */
export class NotAFile extends Data.TaggedError("NotAFile")<{ readonly path: string; readonly message: string }> {}

/** Why a file operation was refused. */
export type FsError = InvalidPath | ReadOnlyZone | LimitExceeded | NotFound | NotAFile

export { InvalidPath } from "./paths.js"

/** An environment's files, read directly and changed only through the checked operations. */
export interface EnvironmentFs {
  /** For reads. */
  readonly vfs: Vfs
  /** Normalized prefixes nothing may change: the generated docs always, plus the definition's. */
  readonly readOnly: ReadonlyArray<string>
  readonly readFile: (path: string) => Either.Either<Uint8Array, FsError>
  readonly readText: (path: string) => Either.Either<string, FsError>
  readonly writeFile: (path: string, content: Uint8Array | string) => Either.Either<void, FsError>
  /** A file, or a directory with everything under it. */
  readonly remove: (path: string) => Either.Either<void, FsError>
  /** Onto `to`, or into it when `to` is a directory (as `mv` does). */
  readonly move: (from: string, to: string) => Either.Either<void, FsError>
  /** Onto `to`, or into it when `to` is a directory (as `cp -r` does). */
  readonly copy: (from: string, to: string) => Either.Either<void, FsError>
  /** Whether the tree changed since it was opened or since `markClean`; rewriting a file with the same bytes is no change. */
  readonly changed: () => boolean
  readonly markClean: () => void
}

/** What a change does: deletions first, then writes. */
interface Plan {
  readonly deletes: ReadonlyArray<string>
  readonly puts: ReadonlyArray<readonly [string, Uint8Array]>
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()
const ok: Either.Either<void, never> = Either.right(undefined)

/** A size and its limit, exact where rounding would show them the same ("2 MB, over ... 2 MB"). */
const sizeAndLimit = (bytes: number, max: number): readonly [string, string] =>
  formatBytes(bytes) === formatBytes(max) ? [`${bytes} bytes`, `${max} bytes`] : [formatBytes(bytes), formatBytes(max)]

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => {
  if (a.byteLength !== b.byteLength) return false
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false
  return true
}

/** The gateway over `vfs`, refusing changes under `readOnly` (and the generated docs) and beyond `limits`. */
export const environmentFs = (vfs: Vfs, options: { readonly readOnly: ReadonlyArray<string>; readonly limits: FsLimits }): EnvironmentFs => {
  const readOnly = [...new Set([...generatedPaths, ...options.readOnly].map((path) => Either.getOrThrow(normalizePath(path))))]
  const { maxFileBytes, maxTotalBytes } = options.limits
  let dirty = false

  const isFile = (path: string) => vfs.read(path) !== undefined
  // A zone is a folder even while empty, so `cp a.csv /out` puts a file into /out, not at it.
  const isDirectory = (path: string) => !isFile(path) && (isZone(path) || vfs.exists(path))

  const notFound = (path: string): NotFound => {
    let near = parentOf(path)
    while (near !== "/" && !vfs.exists(near)) near = parentOf(near)
    return new NotFound({ path, message: `${path} does not exist: ls ${near} to see what is there` })
  }

  const refusal = (path: string, zone: string, fix: string): ReadOnlyZone =>
    new ReadOnlyZone({
      path,
      zone,
      message: zone === path
        ? `${path} is read-only (it is generated or protected): ${fix}`
        : `${path} is in ${zone}, which is read-only: ${fix}`
    })
  const copyFix = (path: string) => `copy it to /tmp (cp ${path} /tmp/${baseName(path)}) and work on the copy`

  /** A file may be written at `path` only outside read-only zones. */
  const checkWritable = (path: string): ReadOnlyZone | undefined => {
    const zone = readOnly.find((prefix) => isWithin(path, prefix))
    if (zone === undefined) return undefined
    return refusal(path, zone, isFile(path) ? copyFix(path) : `write it under /tmp or /out instead (for example /tmp/${baseName(path)})`)
  }
  /** Deleting `path` must neither touch a read-only zone nor take one with it. */
  const checkRemovable = (path: string): ReadOnlyZone | undefined => {
    const zone = readOnly.find((prefix) => isWithin(path, prefix))
    if (zone !== undefined) return refusal(path, zone, copyFix(path))
    const inside = readOnly.find((prefix) => isWithin(prefix, path) && vfs.exists(prefix))
    if (inside === undefined) return undefined
    return new ReadOnlyZone({
      path,
      zone: inside,
      message: `${path} holds ${inside}, which is read-only: remove or move the other files under ${path} one at a time instead`
    })
  }
  /** A file may go at `path` unless a directory is there or a file sits where a parent folder must be. */
  const checkPlaceable = (path: string): NotAFile | undefined => {
    if (path === "/" || isDirectory(path)) {
      return new NotAFile({ path, message: `${path} is a directory, so a file cannot be written there: choose a file path such as ${childOf(path, "name.txt")}` })
    }
    const blocking = ancestorsOf(path).find(isFile)
    if (blocking === undefined) return undefined
    return new NotAFile({ path, message: `${blocking} is a file, so ${path} cannot be created under it: choose another path` })
  }

  const filesUnder = (path: string): ReadonlyArray<readonly [string, number]> => {
    const bytes = vfs.read(path)
    if (bytes !== undefined) return [[path, bytes.byteLength]]
    return vfs.list(path, { recursive: true }).flatMap((entry) => entry.kind === "file" ? [[entry.path, entry.size] as const] : [])
  }

  const checkLimits = (plan: Plan): LimitExceeded | undefined => {
    const after = new Map<string, number>()
    let change = 0
    for (const path of plan.deletes) {
      for (const [file, size] of filesUnder(path)) {
        if (after.has(file)) continue
        after.set(file, 0)
        change -= size
      }
    }
    for (const [path, bytes] of plan.puts) {
      if (bytes.byteLength > maxFileBytes) {
        const [size, limit] = sizeAndLimit(bytes.byteLength, maxFileBytes)
        return new LimitExceeded({
          path,
          limit: "maxFileBytes",
          bytes: bytes.byteLength,
          max: maxFileBytes,
          message: `${path} would be ${size}, over this environment's limit of ${limit} per file (maxFileBytes): ` +
            `nothing was changed. Write it in smaller parts, or keep only what you need (a summary, a filtered subset).`
        })
      }
      change += bytes.byteLength - (after.get(path) ?? vfs.read(path)?.byteLength ?? 0)
      after.set(path, bytes.byteLength)
    }
    // The generated docs (/std, /README.md, ...) are Foundry's, made afresh each run and beyond the
    // agent's reach: only the agent's own files count against the limit it is told to stay under.
    const generated = generatedPaths.reduce((sum, path) => sum + filesUnder(path).reduce((bytes, [, size]) => bytes + size, 0), 0)
    const total = vfs.totalBytes() - generated + change
    // Only growth is refused: a change that frees space is always allowed, even over the limit.
    if (change <= 0 || total <= maxTotalBytes) return undefined
    const path = plan.puts[0]?.[0] ?? "/"
    const [size, limit] = sizeAndLimit(total, maxTotalBytes)
    return new LimitExceeded({
      path,
      limit: "maxTotalBytes",
      bytes: total,
      max: maxTotalBytes,
      message: `this change to ${path} would bring the environment to ${size}, over its limit of ${limit} in total (maxTotalBytes): ` +
        `nothing was changed. Remove files you no longer need (for example under /tmp) first.`
    })
  }

  /** Checks the whole plan, then applies it, or applies nothing. */
  const apply = (plan: Plan): Either.Either<void, FsError> => {
    for (const path of plan.deletes) {
      const refused = checkRemovable(path)
      if (refused !== undefined) return Either.left(refused)
    }
    for (const [path] of plan.puts) {
      const refused = checkWritable(path) ?? checkPlaceable(path)
      if (refused !== undefined) return Either.left(refused)
    }
    const over = checkLimits(plan)
    if (over !== undefined) return Either.left(over)
    for (const path of plan.deletes) vfs.delete(path)
    for (const [path, bytes] of plan.puts) vfs.put(path, bytes)
    if (plan.deletes.length > 0 || plan.puts.length > 0) dirty = true
    return ok
  }

  const readFile = (raw: string): Either.Either<Uint8Array, FsError> =>
    Either.flatMap(normalizePath(raw), (path): Either.Either<Uint8Array, FsError> => {
      const bytes = vfs.read(path)
      if (bytes !== undefined) return Either.right(bytes)
      if (isDirectory(path)) return Either.left(new NotAFile({ path, message: `${path} is a directory, not a file: list it with ls ${path}` }))
      return Either.left(notFound(path))
    })

  /**
   * The plan that puts `from` (a file or a directory) at `to`, or inside `to` when it is a
   * directory; with `removeSource` the source goes (a move). `undefined` when there is nothing to do.
   */
  const transfer = (rawFrom: string, rawTo: string, removeSource: boolean): Either.Either<Plan | undefined, FsError> =>
    Either.flatMap(Either.all([normalizePath(rawFrom), normalizePath(rawTo)]), ([from, to]): Either.Either<Plan | undefined, FsError> => {
      const verb = removeSource ? "move" : "copy"
      if (!vfs.exists(from)) return Either.left(notFound(from))
      if (from === "/") return Either.left(new InvalidPath({ path: from, message: `cannot ${verb} the root /: name a file or a folder` }))
      // A trailing slash asks for "into the folder", as in `mv a.csv /tmp/`.
      const dest = isDirectory(to) || rawTo.trimEnd().endsWith("/") ? childOf(to, baseName(from)) : to
      if (dest === from) return Either.right(undefined)
      const bytes = vfs.read(from)
      const deletes = removeSource ? [from] : []
      if (bytes !== undefined) return Either.right({ deletes, puts: [[dest, bytes] as const] })
      if (isWithin(dest, from)) {
        return Either.left(new InvalidPath({ path: dest, message: `cannot ${verb} the folder ${from} into itself (${dest}): choose a destination outside it` }))
      }
      if (isFile(dest)) {
        return Either.left(new NotAFile({ path: dest, message: `${dest} is a file, so the folder ${from} cannot be put there: choose a folder path` }))
      }
      const puts = filesUnder(from).flatMap(([file]) => {
        const content = vfs.read(file)
        return content === undefined ? [] : [[dest + file.slice(from.length), content] as const]
      })
      return Either.right({ deletes, puts })
    })

  return {
    vfs,
    readOnly,
    readFile,
    readText: (path) => Either.map(readFile(path), (bytes) => decoder.decode(bytes)),
    writeFile: (raw, content) =>
      Either.flatMap(normalizePath(raw), (path) => {
        // A copy: the caller's buffer may change after the write; the tree must not.
        const bytes = typeof content === "string" ? encoder.encode(content) : content.slice()
        const before = vfs.read(path)
        if (before !== undefined && sameBytes(before, bytes)) {
          const refused = checkWritable(path)
          return refused === undefined ? ok : Either.left(refused)
        }
        return apply({ deletes: [], puts: [[path, bytes]] })
      }),
    remove: (raw) =>
      Either.flatMap(normalizePath(raw), (path) => vfs.exists(path) ? apply({ deletes: [path], puts: [] }) : Either.left(notFound(path))),
    move: (from, to) => Either.flatMap(transfer(from, to, true), (plan) => plan === undefined ? ok : apply(plan)),
    copy: (from, to) => Either.flatMap(transfer(from, to, false), (plan) => plan === undefined ? ok : apply(plan)),
    changed: () => dirty,
    markClean: () => {
      dirty = false
    }
  }
}
