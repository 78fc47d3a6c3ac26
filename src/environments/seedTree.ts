/**
 * The tree a scope starts with, before its first version: the definition's `files`, over the
 * project folder it names as its backend. A folder is read through the Vfs that never leaves it;
 * from the first change on, the store holds the tree (so later edits of the folder reach new
 * instances, and never one that already works on its copy).
 */
import { isAbsolute, resolve } from "node:path"
import { Either } from "effect"
import type { EnvironmentDefinition } from "../definitions/defineEnvironment.js"
import type { Tree } from "./vfs/Tree.js"
import { directoryVfs } from "./vfs/directoryVfs.js"

/** The starting tree, or why it cannot be read (a folder that is missing or over the size limit). */
export const seedTree = (environment: EnvironmentDefinition, projectRoot: string): Either.Either<Tree, string> => {
  const encoder = new TextEncoder()
  const files = Object.entries(environment.files).map(([path, content]): [string, Uint8Array] => [path, encoder.encode(content)])
  if (environment.backend._tag === "Memory") return Either.right(new Map(files))
  const folder = isAbsolute(environment.backend.path) ? environment.backend.path : resolve(projectRoot, environment.backend.path)
  const base = Either.try({ try: () => directoryVfs(folder).files(), catch: (error) => `the environment's folder ${folder} cannot be read: ${error instanceof Error ? error.message : String(error)}` })
  return Either.flatMap(base, (tree) => {
    const bytes = [...tree.values()].reduce((total, content) => total + content.length, 0)
    return bytes > environment.limits.maxTotalBytes
      ? Either.left(`the environment's folder ${folder} holds ${bytes} bytes, more than maxTotalBytes (${environment.limits.maxTotalBytes}): raise the limit or point the environment at a smaller folder`)
      : Either.right(new Map([...tree, ...files]))
  })
}
