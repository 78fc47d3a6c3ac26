/**
 * Searching the tree by regular expression, line by line, so a model can find what it needs in
 * large files without reading them. Binary files are skipped; long lines are clipped in the
 * answer; the search stops at `maxMatches` and says so.
 */
import { Data, Either } from "effect"
import { NotFound } from "./EnvironmentFs.js"
import { isBinary } from "./mediaType.js"
import { type InvalidPath, normalizePath } from "./paths.js"
import type { Vfs } from "./Vfs.js"

/** A pattern that is not a valid regular expression; `message` says why. */
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
}

const maxLineChars = 300
const decoder = new TextDecoder()

/** The lines of the files under `options.path` matching `options.pattern`. */
export const grep = (vfs: Vfs, options: GrepOptions): Either.Either<GrepResult, GrepError> => {
  let regex: RegExp
  try {
    regex = new RegExp(options.pattern, options.ignoreCase === true ? "i" : "")
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error)
    return Either.left(new InvalidPattern({
      pattern: options.pattern,
      message: `${JSON.stringify(options.pattern)} is not a valid regular expression (${why}); escape special characters such as ( [ . * + ? with a backslash to match them literally`
    }))
  }
  return Either.flatMap(normalizePath(options.path ?? "/"), (root): Either.Either<GrepResult, GrepError> => {
    if (!vfs.exists(root)) return Either.left(new NotFound({ path: root, message: `${root} does not exist: ls / to see what is there` }))
    const max = options.maxMatches ?? 100
    const single = vfs.read(root)
    const paths = single !== undefined ? [root] : vfs.list(root, { recursive: true }).flatMap((entry) => entry.kind === "file" ? [entry.path] : [])
    const matches: Array<GrepMatch> = []
    for (const path of paths) {
      const bytes = path === root && single !== undefined ? single : vfs.read(path)
      if (bytes === undefined || isBinary(bytes)) continue
      const lines = decoder.decode(bytes).split(/\r?\n/)
      for (let index = 0; index < lines.length; index++) {
        const line = lines[index] ?? ""
        if (!regex.test(line)) continue
        if (matches.length === max) return Either.right({ matches, truncated: true })
        matches.push({ path, line: index + 1, text: line.length <= maxLineChars ? line : `${line.slice(0, maxLineChars)}… (${line.length - maxLineChars} more characters)` })
      }
    }
    return Either.right({ matches, truncated: false })
  })
}
