/**
 * Paths inside a working environment: POSIX, absolute, normalized once at the edge (verbs,
 * `env:fs`, adapters) so every later comparison is a plain string comparison. The zones are the
 * top-level folders whose purpose the orientation file explains.
 */
import { Data, Either } from "effect"

/** The top-level folders with a documented purpose; files elsewhere are allowed too. */
export const zones = ["/inbox", "/scripts", "/skills", "/std", "/tmp", "/out"] as const

/** One of `zones`. */
export type Zone = typeof zones[number]

/** A path that cannot name anything in the tree; `message` says why, for a model to fix. */
export class InvalidPath extends Data.TaggedError("InvalidPath")<{ readonly path: string; readonly message: string }> {}

/** Longer paths are refused: nothing legitimate needs them and they bloat listings. */
export const maxPathLength = 1024

const invalid = (path: string, why: string): Either.Either<never, InvalidPath> =>
  Either.left(new InvalidPath({ path, message: `invalid path ${JSON.stringify(path.slice(0, 200))}: ${why}` }))

/**
 * `"/a/./b/../c"` -> `"/a/c"`; a relative path is taken from `/`; repeated and trailing slashes go.
 * Refuses an empty path, NUL, a `..` that would climb above `/`, and paths over 1024 characters.
 */
export const normalizePath = (path: string): Either.Either<string, InvalidPath> => {
  if (path.trim() === "") return invalid(path, "the path is empty; paths look like /inbox/data.csv")
  if (path.includes("\0")) return invalid(path, "it contains a NUL character")
  if (path.length > maxPathLength) return invalid(path, `it is longer than ${maxPathLength} characters`)
  const parts: Array<string> = []
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue
    if (part === "..") {
      if (parts.length === 0) return invalid(path, `".." climbs above the root /; use an absolute path such as /tmp/name`)
      parts.pop()
      continue
    }
    parts.push(part)
  }
  return Either.right(`/${parts.join("/")}`)
}

/** Whether `path` is `prefix` or lies under it (both normalized). */
export const isWithin = (path: string, prefix: string): boolean =>
  prefix === "/" || path === prefix || path.startsWith(`${prefix}/`)

/** The zone `path` (normalized) lies in, if any. */
export const zoneOf = (path: string): Zone | undefined => zones.find((zone) => isWithin(path, zone))

/** Whether `path` (normalized) is one of the zones, which count as folders even while empty. */
export const isZone = (path: string): boolean => zones.some((zone) => zone === path)

/** The folder holding `path` (normalized); `/` for a top-level entry and for `/` itself. */
export const parentOf = (path: string): string => {
  const index = path.lastIndexOf("/")
  return index <= 0 ? "/" : path.slice(0, index)
}

/** The last segment of `path` (normalized); empty for `/`. */
export const baseName = (path: string): string => path.slice(path.lastIndexOf("/") + 1)

/** `name` inside the folder `dir` (normalized). */
export const childOf = (dir: string, name: string): string => dir === "/" ? `/${name}` : `${dir}/${name}`

/** The folders above `path` (normalized), nearest last, without `/`: "/a/b/c" -> ["/a", "/a/b"]. */
export const ancestorsOf = (path: string): ReadonlyArray<string> => {
  const result: Array<string> = []
  for (let index = path.indexOf("/", 1); index > 0; index = path.indexOf("/", index + 1)) {
    result.push(path.slice(0, index))
  }
  return result
}
