/**
 * Where an environment's files live. Synchronous on purpose: trees are in memory and the directory
 * backend reads the host with `node:fs` sync calls, so the worker bridge can answer a script's
 * file call without a fiber. Every method takes normalized paths; zone and limit checks belong to
 * the gateway (`EnvironmentFs`), which is the only caller of `put` and `delete`.
 */
import { Data } from "effect"
import { isWithin } from "./paths.js"
import { hasDirectory, listEntries, type Tree, treeBytes, type VfsEntry } from "./Tree.js"

export type { VfsEntry } from "./Tree.js"

/** A file tree to read and (through the gateway) change. */
export interface Vfs {
  readonly read: (path: string) => Uint8Array | undefined
  /** A file or an implied directory. */
  readonly exists: (path: string) => boolean
  /** The entries under `dir`, sorted by path; the file's own entry when `dir` is a file; empty when nothing is there. */
  readonly list: (dir: string, options?: { readonly recursive?: boolean }) => ReadonlyArray<VfsEntry>
  /** The whole current tree (directory backend: host files with the overlay applied). */
  readonly files: () => Tree
  readonly totalBytes: () => number
  /** Raw mutations, without zone or limit checks: only the gateway calls these. */
  readonly put: (path: string, bytes: Uint8Array) => void
  /** A file, or a directory and everything under it. */
  readonly delete: (path: string) => void
}

/** A stored version was asked to change: versions are browsed, never edited. */
export class ReadOnlySnapshot extends Data.TaggedError("ReadOnlySnapshot")<{ readonly path: string; readonly message: string }> {}

const sizes = (tree: Tree): Iterable<readonly [string, number]> => {
  const entries = tree.entries()
  return {
    [Symbol.iterator]: function*() {
      for (const [path, bytes] of entries) yield [path, bytes.byteLength] as const
    }
  }
}

const reader = (files: () => Tree) => ({
  read: (path: string) => files().get(path),
  exists: (path: string) => files().has(path) || hasDirectory(files().keys(), path),
  list: (dir: string, options?: { readonly recursive?: boolean }) => listEntries(sizes(files()), dir, options?.recursive === true)
})

/** A tree held in memory, starting from `initial`. */
export const memoryVfs = (initial: Tree = new Map()): Vfs => {
  const tree = new Map(initial)
  let total = treeBytes(tree)
  return {
    ...reader(() => tree),
    // A copy: the caller keeps a value that later writes do not change.
    files: () => new Map(tree),
    totalBytes: () => total,
    put: (path, bytes) => {
      total += bytes.byteLength - (tree.get(path)?.byteLength ?? 0)
      tree.set(path, bytes)
    },
    delete: (path) => {
      for (const [file, bytes] of tree) {
        if (isWithin(file, path)) {
          total -= bytes.byteLength
          tree.delete(file)
        }
      }
    }
  }
}

/** A frozen tree (a stored version): `put` and `delete` throw `ReadOnlySnapshot`. */
export const snapshotVfs = (tree: Tree): Vfs => {
  const frozen: Tree = new Map(tree)
  const total = treeBytes(frozen)
  const refuse = (path: string): never => {
    throw new ReadOnlySnapshot({ path, message: `${path} belongs to a stored version, which cannot be changed` })
  }
  return {
    ...reader(() => frozen),
    files: () => frozen,
    totalBytes: () => total,
    put: refuse,
    delete: refuse
  }
}
