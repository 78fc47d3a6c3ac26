/**
 * The hash that names a build: files by name and content, so that the same files give the same
 * name and any edit, addition, removal or rename gives another.
 */
import { createHash } from "node:crypto"

/** One file to hash: its relative path and its bytes. */
export interface HashedFile {
  readonly file: string
  readonly content: Uint8Array
}

/** The sha256 (hex) of `files` in the order given. */
export const contentHash = (files: Iterable<HashedFile>): string => {
  const hash = createHash("sha256")
  for (const { content, file } of files) {
    // Lengths first, so that no two different sets of files can hash the same bytes.
    hash.update(`${Buffer.byteLength(file)}:${file}:${content.byteLength}:`).update(content)
  }
  return hash.digest("hex")
}

/** The id of a release whose bundled files are `files` (sorted by path): `rel_` and 12 hex of their hash. */
export const releaseIdOf = (files: Iterable<HashedFile>): string => `rel_${contentHash(files).slice(0, 12)}`
