/**
 * The value an environment's files are: a map from absolute path to bytes. Directories are not
 * stored; a directory exists while some file lies under it, which keeps a tree trivially
 * serialisable and two trees comparable path by path.
 */
import { isWithin } from "./paths.js"

/** Files by absolute path; directories are implied by paths. Immutable values. */
export type Tree = ReadonlyMap<string, Uint8Array>

/** A file or an implied directory, as listings show it; a directory's size is the bytes under it. */
export interface VfsEntry {
  readonly path: string
  readonly kind: "file" | "directory"
  readonly size: number
}

/** The bytes of every file in `tree`. */
export const treeBytes = (tree: Tree): number => {
  let total = 0
  for (const bytes of tree.values()) total += bytes.byteLength
  return total
}

/** Whether some file lies under `dir` (normalized), so the directory exists; `/` always does. */
export const hasDirectory = (paths: Iterable<string>, dir: string): boolean => {
  if (dir === "/") return true
  const prefix = `${dir}/`
  for (const path of paths) if (path.startsWith(prefix)) return true
  return false
}

/**
 * The entries under `dir` given every file's path and size: the direct children, or with
 * `recursive` every file and directory below, sorted by path. Empty when `dir` holds nothing.
 * When `dir` is a file, its own entry alone, as `ls` of a file shows the file.
 */
export const listEntries = (
  files: Iterable<readonly [string, number]>,
  dir: string,
  recursive: boolean
): ReadonlyArray<VfsEntry> => {
  const entries = new Map<string, { kind: "file" | "directory"; size: number }>()
  const addTo = (path: string, kind: "file" | "directory", size: number) => {
    const entry = entries.get(path)
    if (entry === undefined) entries.set(path, { kind, size })
    else entry.size += size
  }
  const start = dir === "/" ? 1 : dir.length + 1
  let itself: number | undefined
  for (const [path, size] of files) {
    if (path === dir) itself = size
    if (path === dir || !isWithin(path, dir)) continue
    let from = start
    for (let slash = path.indexOf("/", from); slash > 0; slash = path.indexOf("/", from)) {
      addTo(path.slice(0, slash), "directory", size)
      if (!recursive) break
      from = slash + 1
    }
    if (recursive || path.indexOf("/", start) < 0) addTo(path, "file", size)
  }
  if (itself !== undefined) return [{ path: dir, kind: "file", size: itself }]
  return [...entries].map(([path, { kind, size }]) => ({ path, kind, size })).sort((a, b) => a.path < b.path ? -1 : a.path > b.path ? 1 : 0)
}
