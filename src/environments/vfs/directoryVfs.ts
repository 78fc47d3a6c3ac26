/**
 * A host folder as an environment's starting tree, copy-on-write: reads fall through to the host,
 * while writes and deletions live in memory (the overlay and the deleted set). The host folder is
 * never written. Only what lies inside the folder is reachable: every host path is resolved with
 * `realpath` and refused when it lands outside (a symlink out, a `..`), so a symlink cannot leak
 * the host's files into the tree.
 */
import { readdirSync, readFileSync, realpathSync, statSync } from "node:fs"
import { join, sep } from "node:path"
import { Data } from "effect"
import { childOf, isWithin } from "./paths.js"
import { listEntries, type Tree } from "./Tree.js"
import type { Vfs } from "./Vfs.js"

/** A directory-backed tree, with its in-memory changes readable for persisting them separately. */
export interface DirectoryVfs extends Vfs {
  /** Files written since the tree was opened (they hide the host's file at the same path). */
  readonly overlay: () => Tree
  /** Paths deleted since the tree was opened: host files at or under them are hidden. */
  readonly deleted: () => ReadonlySet<string>
}

/** The host folder of a directory backend cannot be read. */
export class HostDirectoryUnreadable extends Data.TaggedError("HostDirectoryUnreadable")<{ readonly root: string; readonly message: string }> {}

interface HostFile {
  /** The resolved host path, inside the root. */
  readonly real: string
  readonly size: number
}

/** `realpath`, or undefined for a broken link or a missing file. */
const resolve = (path: string): string | undefined => {
  try {
    return realpathSync(path)
  } catch {
    return undefined
  }
}

/**
 * Every regular file under `realRoot` by tree path. Symlinks are followed only while their target
 * stays inside the root; a directory already on the walk's path is skipped, so a link loop ends.
 */
const indexHost = (realRoot: string): ReadonlyMap<string, HostFile> => {
  const inside = (real: string) => real === realRoot || real.startsWith(realRoot + sep)
  const index = new Map<string, HostFile>()
  const walk = (dirReal: string, dir: string, onPath: ReadonlySet<string>) => {
    let entries
    try {
      entries = readdirSync(dirReal, { withFileTypes: true })
    } catch {
      return
    }
    for (const entry of entries) {
      const host = join(dirReal, entry.name)
      const real = entry.isSymbolicLink() ? resolve(host) : host
      if (real === undefined || !inside(real)) continue
      let stats
      try {
        stats = statSync(real)
      } catch {
        continue
      }
      const path = childOf(dir, entry.name)
      if (stats.isDirectory()) {
        if (!onPath.has(real)) walk(real, path, new Set([...onPath, real]))
      } else if (stats.isFile()) {
        index.set(path, { real, size: stats.size })
      }
    }
  }
  walk(realRoot, "/", new Set([realRoot]))
  return index
}

/**
 * A tree reading `root` on the host, with `overlay` (written files) and `deleted` (removed paths)
 * applied on top. The host folder is indexed on first use; a file's bytes are read when asked for.
 * Throws `HostDirectoryUnreadable` when `root` is not a readable folder.
 */
export const directoryVfs = (root: string, overlay: Tree = new Map(), deleted: ReadonlySet<string> = new Set()): DirectoryVfs => {
  const realRoot = resolve(root)
  if (realRoot === undefined || !statSync(realRoot).isDirectory()) {
    throw new HostDirectoryUnreadable({ root, message: `the environment's folder ${root} does not exist or is not a directory` })
  }
  const written = new Map(overlay)
  const removed = new Set(deleted)
  let cached: ReadonlyMap<string, HostFile> | undefined
  const host = () => cached ??= indexHost(realRoot)

  const hidden = (path: string): boolean => {
    for (const gone of removed) if (isWithin(path, gone)) return true
    return false
  }
  /** Host files still visible: not deleted and not replaced by a written file. */
  const visibleHost = function*(): Generator<readonly [string, HostFile]> {
    for (const entry of host()) if (!written.has(entry[0]) && !hidden(entry[0])) yield entry
  }
  const sizes = function*(): Generator<readonly [string, number]> {
    for (const [path, bytes] of written) yield [path, bytes.byteLength]
    for (const [path, file] of visibleHost()) yield [path, file.size]
  }
  const readHost = (file: HostFile): Uint8Array | undefined => {
    // Resolved again: the host may have swapped a file for a link since it was indexed.
    const real = resolve(file.real)
    if (real === undefined || !(real.startsWith(realRoot + sep))) return undefined
    try {
      return new Uint8Array(readFileSync(real))
    } catch {
      return undefined
    }
  }
  const isFile = (path: string) => written.has(path) || (host().has(path) && !hidden(path))

  return {
    read: (path) => {
      const bytes = written.get(path)
      if (bytes !== undefined) return bytes
      const file = host().get(path)
      return file === undefined || hidden(path) ? undefined : readHost(file)
    },
    exists: (path) => {
      if (path === "/" || isFile(path)) return true
      const prefix = `${path}/`
      for (const [file] of sizes()) if (file.startsWith(prefix)) return true
      return false
    },
    list: (dir, options) => listEntries(sizes(), dir, options?.recursive === true),
    files: () => {
      const tree = new Map<string, Uint8Array>()
      for (const [path, file] of visibleHost()) {
        const bytes = readHost(file)
        if (bytes !== undefined) tree.set(path, bytes)
      }
      for (const [path, bytes] of written) tree.set(path, bytes)
      return new Map([...tree].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0))
    },
    totalBytes: () => {
      let total = 0
      for (const [, size] of sizes()) total += size
      return total
    },
    put: (path, bytes) => {
      written.set(path, bytes)
    },
    delete: (path) => {
      for (const file of written.keys()) if (isWithin(file, path)) written.delete(file)
      for (const gone of removed) if (isWithin(gone, path)) removed.delete(gone)
      removed.add(path)
    },
    overlay: () => new Map(written),
    deleted: () => new Set(removed)
  }
}
