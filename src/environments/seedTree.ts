/**
 * The tree a scope starts with, before its first version: the definition's `files`, over the
 * project folder it names as its backend. A folder is read through the Vfs that never leaves it;
 * from the first change on, the store holds the tree (so later edits of the folder reach new
 * instances, and never one that already works on its copy).
 */
import { isAbsolute, resolve } from "node:path"
import { Data, Effect, Either, Option } from "effect"
import type { EnvironmentDefinition } from "../definitions/defineEnvironment.js"
import type { EnvironmentScope, EnvironmentStorage } from "../durable/EnvironmentStorage.js"
import type { StoreError } from "../durable/StoreError.js"
import type { Tree } from "./vfs/Tree.js"
import { directoryVfs } from "./vfs/directoryVfs.js"

/** The starting files cannot be read: `message` says why (from `seedTree`). */
export class StartingFilesUnreadable extends Data.TaggedError("StartingFilesUnreadable")<{ readonly message: string }> {}

/** The starting tree, or why it cannot be read (a folder that is missing or over the size limit). */
export const seedTree = (environment: EnvironmentDefinition, projectRoot: string): Either.Either<Tree, string> => {
  const encoder = new TextEncoder()
  const files = Object.entries(environment.files).map(([path, content]): [string, Uint8Array] => [path, encoder.encode(content)])
  if (environment.backend._tag === "Memory") return Either.right(new Map(files))
  const folder = isAbsolute(environment.backend.path) ? environment.backend.path : resolve(projectRoot, environment.backend.path)
  const unreadable = (error: unknown) => `the environment's folder ${folder} cannot be read: ${error instanceof Error ? error.message : String(error)}`
  // Its size by the files' sizes first: a folder over the limit is refused without reading it into memory.
  const sized = Either.try({
    try: () => {
      const vfs = directoryVfs(folder)
      return { vfs, bytes: vfs.totalBytes() }
    },
    catch: unreadable
  })
  return Either.flatMap(sized, ({ bytes, vfs }) =>
    bytes > environment.limits.maxTotalBytes
      ? Either.left(`the environment's folder ${folder} holds ${bytes} bytes, more than maxTotalBytes (${environment.limits.maxTotalBytes}): raise the limit or point the environment at a smaller folder`)
      : Either.map(Either.try({ try: () => vfs.files(), catch: unreadable }), (tree) => new Map([...tree, ...files])))
}

/**
 * The tree at `version` of a scope, none when there is no such version. Version 0 is stored with
 * the first change; before it, or for a scope first changed before version 0 was kept, it is the
 * definition's starting files.
 */
export const versionTree = (
  storage: EnvironmentStorage["Type"],
  scope: EnvironmentScope,
  environment: EnvironmentDefinition,
  projectRoot: string,
  version: number
): Effect.Effect<Option.Option<Tree>, StoreError | StartingFilesUnreadable> =>
  Effect.flatMap(storage.at(scope, version), (stored) =>
    Option.isSome(stored)
      ? Effect.succeedSome(stored.value.tree)
      : version !== 0
      ? Effect.succeedNone
      : Either.match(seedTree(environment, projectRoot), {
        onLeft: (message) => Effect.fail(new StartingFilesUnreadable({ message })),
        onRight: Effect.succeedSome
      }))
