/**
 * `env:fs`, the file system as scripts see it: its declarations and README for `/std/fs`, and the
 * host side that answers a script's call. Scripts may pass anything, so every argument is checked
 * and refused with a message naming the function, the argument and what it should be; every
 * change goes through the gateway, so zones and limits hold for scripts as for verbs.
 */
import { Data, Either } from "effect"
import type { EnvironmentFs, FsError } from "./EnvironmentFs.js"
import { NotAFile, NotFound } from "./EnvironmentFs.js"
import type { ModuleDoc } from "./generatedDocs.js"
import { normalizePath } from "./paths.js"

/** A script called an `env:fs` function wrongly (an unknown name, an argument of the wrong type, bad JSON). */
export class FsCallRefused extends Data.TaggedError("FsCallRefused")<{ readonly message: string }> {}

/** The functions scripts import from `env:fs`. */
export const fsExports: ReadonlyArray<string> = [
  "readFile", "readText", "writeFile", "exists", "list", "remove", "move", "copy", "readJson", "writeJson"
]

const types = `/** A file or a folder; a folder's size is the bytes of the files under it. */
export interface Entry {
  readonly path: string
  readonly kind: "file" | "directory"
  readonly size: number
}

/** The bytes of a file. */
export function readFile(path: string): Promise<Uint8Array>
/** A file's text (UTF-8). */
export function readText(path: string): Promise<string>
/** Writes (or replaces) a file; folders are created as needed. Refused in read-only zones and beyond the size limits. */
export function writeFile(path: string, content: string | Uint8Array): Promise<void>
/** Whether a file or a folder exists at path. */
export function exists(path: string): Promise<boolean>
/** The entries of a folder (default "/"), sorted by path; with recursive, everything below it. */
export function list(dir?: string, options?: { recursive?: boolean }): Promise<Array<Entry>>
/** Removes a file, or a folder with everything under it. */
export function remove(path: string): Promise<void>
/** Moves a file or a folder to \`to\`, or into \`to\` when it is a folder. */
export function move(from: string, to: string): Promise<void>
/** Copies a file or a folder to \`to\`, or into \`to\` when it is a folder. */
export function copy(from: string, to: string): Promise<void>
/** A JSON file, parsed. */
export function readJson(path: string): Promise<unknown>
/** Writes value as indented JSON. */
export function writeJson(path: string, value: unknown): Promise<void>
`

const readme = `Every function is async: \`await\` it. Paths are absolute (\`/inbox/data.csv\`); a failure rejects
with an Error whose message says what was wrong and what to do.

\`\`\`js
import { readText, writeJson, list } from "env:fs"

export default async function (args) {
  const files = await list("/inbox")
  const text = await readText(files[0].path)
  await writeJson("/out/summary.json", { lines: text.split("\\n").length })
}
\`\`\`
`

/** The docs and declarations of `env:fs`. */
export const fsModuleDoc: ModuleDoc = {
  name: "fs",
  kind: "fs",
  description: "read and write the environment's files (async; read-only zones and size limits apply)",
  exports: fsExports,
  types,
  readme
}

type Answer = Either.Either<unknown, FsError | FsCallRefused>

/** A value's kind, as an error message names it. */
const kindOf = (value: unknown): string => {
  if (value === null) return "null"
  if (Array.isArray(value)) return "an array"
  if (ArrayBuffer.isView(value)) return value.constructor.name
  return typeof value === "object" ? "an object" : typeof value
}

const refuse = (message: string): Either.Either<never, FsCallRefused> => Either.left(new FsCallRefused({ message }))

const stringArg = (fn: string, name: string, value: unknown): Either.Either<string, FsCallRefused> =>
  typeof value === "string" ? Either.right(value) : refuse(`${fn}: ${name} must be a string path such as "/inbox/data.csv", got ${kindOf(value)}`)

/** A script's bytes as a Uint8Array of this realm: any typed array or DataView is accepted. */
const contentArg = (fn: string, value: unknown): Either.Either<string | Uint8Array, FsCallRefused> => {
  if (typeof value === "string") return Either.right(value)
  if (ArrayBuffer.isView(value)) return Either.right(new Uint8Array(value.buffer, value.byteOffset, value.byteLength))
  const hint = typeof value === "object" && value !== null ? "; use writeJson(path, value) to write an object as JSON" : ""
  return refuse(`${fn}: content must be a string or a Uint8Array, got ${kindOf(value)}${hint}`)
}

const recursiveArg = (value: unknown): Either.Either<boolean, FsCallRefused> => {
  if (value === undefined || value === null) return Either.right(false)
  if (typeof value !== "object" || Array.isArray(value)) return refuse(`list: options must be an object such as { recursive: true }, got ${kindOf(value)}`)
  const recursive: unknown = "recursive" in value ? value.recursive : undefined
  if (recursive === undefined || typeof recursive === "boolean") return Either.right(recursive === true)
  return refuse(`list: options.recursive must be true or false, got ${kindOf(recursive)}`)
}

const listDir = (fs: EnvironmentFs, raw: unknown, options: unknown): Answer =>
  Either.gen(function*() {
    const dir = yield* normalizePath(yield* stringArg("list", "dir", raw ?? "/"))
    const recursive = yield* recursiveArg(options)
    if (fs.vfs.read(dir) !== undefined) {
      return yield* Either.left(new NotAFile({ path: dir, message: `${dir} is a file, not a folder: read it with readFile or readText` }))
    }
    if (!fs.vfs.exists(dir)) return yield* Either.left(new NotFound({ path: dir, message: `${dir} does not exist: list("/") shows the top of the tree` }))
    return fs.vfs.list(dir, { recursive }).map((entry) => ({ path: entry.path, kind: entry.kind, size: entry.size }))
  })

const readJson = (fs: EnvironmentFs, raw: unknown): Answer =>
  Either.gen(function*() {
    const path = yield* stringArg("readJson", "path", raw)
    const text = yield* fs.readText(path)
    try {
      const value: unknown = JSON.parse(text)
      return value
    } catch (error) {
      return yield* refuse(`readJson: ${path} is not valid JSON (${error instanceof Error ? error.message : String(error)}); readText reads it as text`)
    }
  })

const writeJson = (fs: EnvironmentFs, raw: unknown, value: unknown): Answer =>
  Either.gen(function*() {
    const path = yield* stringArg("writeJson", "path", raw)
    let text: string | undefined
    try {
      text = JSON.stringify(value, null, 2)
    } catch (error) {
      return yield* refuse(`writeJson: the value cannot be written as JSON (${error instanceof Error ? error.message : String(error)})`)
    }
    if (text === undefined) return yield* refuse(`writeJson: ${kindOf(value)} has no JSON form; pass an object, an array, a string, a number or a boolean`)
    return yield* fs.writeFile(path, `${text}\n`)
  })

/**
 * Answers a script's call `fn(...args)` to `env:fs`: the value to hand back (bytes, text, JSON
 * data, entries, or undefined), or the error whose message the script's promise rejects with.
 */
export const fsCall = (fs: EnvironmentFs, fn: string, args: ReadonlyArray<unknown>): Answer => {
  const [first, second] = args
  switch (fn) {
    case "readFile":
      return Either.flatMap(stringArg(fn, "path", first), fs.readFile)
    case "readText":
      return Either.flatMap(stringArg(fn, "path", first), fs.readText)
    case "writeFile":
      return Either.flatMap(Either.all([stringArg(fn, "path", first), contentArg(fn, second)]), ([path, content]) => fs.writeFile(path, content))
    case "exists":
      return Either.map(Either.flatMap(stringArg(fn, "path", first), normalizePath), fs.vfs.exists)
    case "list":
      return listDir(fs, first, second)
    case "remove":
      return Either.flatMap(stringArg(fn, "path", first), fs.remove)
    case "move":
      return Either.flatMap(Either.all([stringArg(fn, "from", first), stringArg(fn, "to", second)]), ([from, to]) => fs.move(from, to))
    case "copy":
      return Either.flatMap(Either.all([stringArg(fn, "from", first), stringArg(fn, "to", second)]), ([from, to]) => fs.copy(from, to))
    case "readJson":
      return readJson(fs, first)
    case "writeJson":
      return writeJson(fs, first, second)
    default:
      return refuse(`env:fs has no function ${JSON.stringify(fn)}; it offers ${fsExports.join(", ")}`)
  }
}
