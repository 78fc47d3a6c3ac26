/**
 * Searching the tree by regular expression, line by line, so a model can find what it needs in
 * large files without reading them. Binary files are skipped; long lines are clipped in the
 * answer; the search stops at `maxMatches` and says so.
 *
 * The pattern comes from a model, and a backtracking pattern such as `^(a+)+$` can hold the
 * host's event loop for minutes on one line. So the matching runs in a fresh `vm` context with a
 * timeout: V8 interrupts a running regular expression when it expires.
 */
import { Script, createContext } from "node:vm"
import { Data, Either } from "effect"
import { NotFound } from "./EnvironmentFs.js"
import { isBinary } from "./mediaType.js"
import { type InvalidPath, normalizePath } from "./paths.js"
import type { Vfs } from "./Vfs.js"

/** A pattern that is not a valid regular expression, or one that took too long; `message` says why. */
export class InvalidPattern extends Data.TaggedError("InvalidPattern")<{ readonly pattern: string; readonly message: string }> {}

/** One line that matched: 1-based line number and the line (clipped when long). */
export interface GrepMatch {
  readonly path: string
  readonly line: number
  readonly text: string
}

/** The matches in path order, and whether the search stopped at `maxMatches`. */
export interface GrepResult {
  readonly matches: ReadonlyArray<GrepMatch>
  readonly truncated: boolean
}

/** Why a search did not run. */
export type GrepError = InvalidPattern | InvalidPath | NotFound

/** What to search for, and where (a file or a folder; `/` by default). */
export interface GrepOptions {
  readonly pattern: string
  readonly path?: string | undefined
  readonly ignoreCase?: boolean | undefined
  /** Default 100. */
  readonly maxMatches?: number | undefined
  /** The whole search's time budget; default 1000 ms. */
  readonly timeoutMs?: number | undefined
}

const maxLineChars = 300
const decoder = new TextDecoder()

/**
 * The search as it runs inside the context: reads `files` (how many), `textOf` (a file's text, or
 * undefined to skip it; called lazily, so a search that stops early decodes no more), `pattern`,
 * `flags`, `max` and `maxLineChars` from the context's globals, and answers JSON (plain data,
 * nothing of the context's realm reaches the host).
 */
const search = new Script(`(() => {
  const regex = new RegExp(pattern, flags)
  const matches = []
  for (let file = 0; file < files; file++) {
    const text = textOf(file)
    if (text === undefined) continue
    // As read_file numbers them: an empty file has no lines, and a last line break starts none.
    const lines = text === "" ? [] : text.split(/\\r?\\n/)
    if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop()
    for (let index = 0; index < lines.length; index++) {
      const line = lines[index]
      if (!regex.test(line)) continue
      if (matches.length === max) return JSON.stringify({ matches, truncated: true })
      matches.push([file, index + 1, line.length <= maxLineChars ? line : line.slice(0, maxLineChars) + "… (" + (line.length - maxLineChars) + " more characters)"])
    }
  }
  return JSON.stringify({ matches, truncated: false })
})()`, { filename: "grep" })

const isTimeout = (error: unknown): boolean =>
  typeof error === "object" && error !== null && "code" in error && error.code === "ERR_SCRIPT_EXECUTION_TIMEOUT"

/** The context's answer (`[file index, line, text]` triples) as matches of `files`. */
const resultOf = (answer: unknown, files: ReadonlyArray<string>): GrepResult => {
  const parsed: unknown = typeof answer === "string" ? JSON.parse(answer) : undefined
  if (typeof parsed !== "object" || parsed === null || !("matches" in parsed) || !Array.isArray(parsed.matches) || !("truncated" in parsed)) {
    throw new Error("grep: the search answered something other than its matches")
  }
  const matches = parsed.matches.flatMap((match: unknown): Array<GrepMatch> => {
    if (!Array.isArray(match)) return []
    const [file, line, text]: Array<unknown> = match
    const path = typeof file === "number" ? files[file] : undefined
    return path !== undefined && typeof line === "number" && typeof text === "string" ? [{ path, line, text }] : []
  })
  return { matches, truncated: parsed.truncated === true }
}

const invalid = (pattern: string, message: string) => Either.left(new InvalidPattern({ pattern, message }))

/** The lines of the files under `options.path` matching `options.pattern`. */
export const grep = (vfs: Vfs, options: GrepOptions): Either.Either<GrepResult, GrepError> => {
  const flags = options.ignoreCase === true ? "i" : ""
  try {
    // Compiled here as well, so a syntax error is explained before any file is read.
    new RegExp(options.pattern, flags)
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error)
    return invalid(options.pattern, `${JSON.stringify(options.pattern)} is not a valid regular expression (${why}); escape special characters such as ( [ . * + ? with a backslash to match them literally`)
  }
  return Either.flatMap(normalizePath(options.path ?? "/"), (root): Either.Either<GrepResult, GrepError> => {
    if (!vfs.exists(root)) return Either.left(new NotFound({ path: root, message: `${root} does not exist: ls / to see what is there` }))
    const paths = vfs.list(root, { recursive: true }).flatMap((entry) => entry.kind === "file" ? [entry.path] : [])
    const textOf = (index: number): string | undefined => {
      const path = paths[index]
      const bytes = path === undefined ? undefined : vfs.read(path)
      return bytes === undefined || isBinary(bytes) ? undefined : decoder.decode(bytes)
    }
    const timeoutMs = options.timeoutMs ?? 1000
    const context = createContext({ files: paths.length, textOf, pattern: options.pattern, flags, max: options.maxMatches ?? 100, maxLineChars })
    let answer: unknown
    try {
      answer = search.runInContext(context, { timeout: timeoutMs })
    } catch (error) {
      if (!isTimeout(error)) throw error
      return invalid(
        options.pattern,
        `the pattern ${JSON.stringify(options.pattern)} took longer than ${timeoutMs} ms, so the search was stopped: nested quantifiers such as (a+)+ or (.*)* backtrack exponentially; simplify the pattern (or search a narrower path)`
      )
    }
    return Either.right(resultOf(answer, paths))
  })
}
