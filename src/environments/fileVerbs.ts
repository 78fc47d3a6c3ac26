/**
 * The verbs that work on files alone, as plain functions over the mutation gateway: each answers
 * the text the model is shown, or an error whose message says what was wrong and what to do. The
 * `Environments` service decides whether what they did is written as a version.
 */
import { Data, Effect, Either } from "effect"
import { describeFile } from "./vfs/describe.js"
import type { EnvironmentFs, FsError } from "./vfs/EnvironmentFs.js"
import { grep, type InvalidPattern } from "./vfs/grep.js"
import { baseName, childOf, isZone, normalizePath } from "./vfs/paths.js"
import { noteRoom, readRange } from "./vfs/readRange.js"

/** A verb refused its input (nothing changed). */
export class VerbRefused extends Data.TaggedError("VerbRefused")<{ readonly message: string }> {}

/** What a verb answers: the model's text, or why it did nothing. */
export type VerbAnswer = Either.Either<string, FsError | InvalidPattern | VerbRefused>

/** A path as the tree holds it (`notes.txt` is `/notes.txt`), for answers that say what changed. */
export const held = (path: string): string => Either.getOrElse(normalizePath(path), () => path)

/** Where `mv` or `cp` puts `from`: onto `to`, or into it when `to` is a folder. */
const destination = (fs: EnvironmentFs, from: string, to: string): string => {
  const target = held(to)
  const folder = fs.vfs.read(target) === undefined && (isZone(target) || fs.vfs.exists(target))
  return folder ? childOf(target, baseName(held(from))) : target
}

const bytes = (count: number): string => count < 10_000 ? `${count} bytes` : `${(count / 1024).toFixed(1)} KB`

/** Whether bytes are text: valid UTF-8 without NUL (a leading BOM is dropped from the text). */
const decodeText = (content: Uint8Array): string | undefined => {
  if (content.includes(0)) return undefined
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(content)
  } catch {
    return undefined
  }
}

/** Why `read_file` and `edit_file` leave a file that is not UTF-8 text alone. */
const notText = (path: string, content: Uint8Array): VerbRefused =>
  new VerbRefused({ message: `${path} is binary (${bytes(content.length)}): use describe to see what it holds, or process it in a script` })

/** Whether bytes start with UTF-8's byte order mark, which the decoded text leaves out. */
const hasBom = (content: Uint8Array): boolean => content[0] === 0xef && content[1] === 0xbb && content[2] === 0xbf

export const writeFile = (fs: EnvironmentFs, path: string, content: string): VerbAnswer =>
  Either.map(fs.writeFile(path, content), () => `wrote ${held(path)} (${bytes(new TextEncoder().encode(content).length)})`)

/** `read_file`: the lines of `range`, as many as fit in `maxChars` (what the model is shown of a result). */
export const readFile = (
  fs: EnvironmentFs,
  path: string,
  range: { readonly from?: number | undefined; readonly to?: number | undefined },
  maxChars: number
): VerbAnswer =>
  Either.flatMap(fs.readFile(path), (content): VerbAnswer => {
    const text = decodeText(content)
    return text === undefined
      ? Either.left(notText(path, content))
      : Either.mapLeft(readRange(text, { from: range.from, to: range.to, maxChars }), ({ lines }) =>
        new VerbRefused({
          message: lines === 0
            ? `${held(path)} is empty, so it has no line ${range.from}: leave from out to read it`
            : `${held(path)} has ${lines} ${lines === 1 ? "line" : "lines"}, so from ${range.from} is past its end: give a from of ${lines} or less, or leave from out to read it from the start`
        }))
  })

/**
 * `edit_file`: the text `old` replaced. The file is read as `read_file` reads it: one that is not
 * UTF-8 (a Windows-1252 CSV, say) is refused, since decoding it leniently would write every byte it
 * could not decode back as U+FFFD; and a BOM the file starts with (Excel's "CSV UTF-8") is kept.
 */
export const editFile = (fs: EnvironmentFs, input: { readonly path: string; readonly old: string; readonly new: string; readonly all?: boolean | undefined }): VerbAnswer =>
  Either.flatMap(fs.readFile(input.path), (content): VerbAnswer => {
    const text = decodeText(content)
    if (text === undefined) return Either.left(notText(input.path, content))
    if (input.old === "") return Either.left(new VerbRefused({ message: "old is empty: give the exact text to replace (write_file replaces a whole file)" }))
    const count = text.split(input.old).length - 1
    if (count === 0) return Either.left(new VerbRefused({ message: `the text to replace is not in ${input.path}; read_file it to see its current text` }))
    if (count > 1 && input.all !== true) {
      return Either.left(new VerbRefused({ message: `the text to replace occurs ${count} times in ${input.path}: include more of the surrounding text so it occurs once, or set all: true` }))
    }
    const next = input.all === true ? text.split(input.old).join(input.new) : text.replace(input.old, () => input.new)
    return Either.map(fs.writeFile(input.path, hasBom(content) ? `\uFEFF${next}` : next), () => `edited ${held(input.path)} (${count} ${count === 1 ? "replacement" : "replacements"})`)
  })

/**
 * `lines` as many as fit in `maxChars` (what the model is shown of a result), at least one; when
 * some are left out, `leftOut(shown)` says so on a last line.
 */
const fitLines = (lines: ReadonlyArray<string>, maxChars: number, leftOut: (shown: number) => string): string => {
  let used = 0
  let shown = 0
  while (shown < lines.length && (shown === 0 || used + (lines[shown]?.length ?? 0) + 1 <= maxChars - noteRoom)) {
    used += (lines[shown]?.length ?? 0) + 1
    shown++
  }
  return shown === lines.length ? lines.join("\n") : `${lines.slice(0, shown).join("\n")}\n${leftOut(shown)}`
}

export const list = (fs: EnvironmentFs, path: string | undefined, recursive: boolean, maxChars: number): VerbAnswer =>
  Either.flatMap(normalizePath(path ?? "/"), (dir): VerbAnswer => {
    if (!isZone(dir) && !fs.vfs.exists(dir)) return Either.left(new VerbRefused({ message: `${dir} does not exist; ls / shows the top of the tree` }))
    const entries = fs.vfs.list(dir, { recursive })
    if (entries.length === 0) return Either.right(`${dir} is empty`)
    const lines = entries.map((entry) => entry.kind === "directory" ? `${entry.path}/` : `${entry.path}  ${bytes(entry.size)}`)
    return Either.right(fitLines(lines, maxChars, (shown) =>
      `[${shown} of ${entries.length} entries, as many as the model is shown of a result: ls a folder within ${dir} to see the rest]`))
  })

export const search = (
  fs: EnvironmentFs,
  input: { readonly pattern: string; readonly path?: string | undefined; readonly ignoreCase?: boolean | undefined },
  maxChars: number
): VerbAnswer => {
  const found = grep(fs.vfs, { pattern: input.pattern, path: input.path, ignoreCase: input.ignoreCase, maxMatches: 200 })
  return Either.map(found, ({ matches, truncated }) => {
    if (matches.length === 0) return `no match for /${input.pattern}/ under ${input.path ?? "/"}`
    const lines = matches.map((match) => `${match.path}:${match.line}: ${match.text}`)
    // Past grep's own 200 matches, or past what fits: either way a note says to narrow the search.
    const all = truncated ? [...lines, "[more matches: narrow the pattern or the path]"] : lines
    return fitLines(all, maxChars, (count) =>
      `[${count} of ${matches.length}${truncated ? " or more" : ""} matches, as many as the model is shown of a result: narrow the pattern or the path]`)
  })
}

export const describe = (fs: EnvironmentFs, path: string): Effect.Effect<string, FsError> =>
  Effect.flatMap(fs.readFile(path), (content) => describeFile(path, content))

export const remove = (fs: EnvironmentFs, path: string): VerbAnswer => Either.map(fs.remove(path), () => `removed ${held(path)}`)

export const move = (fs: EnvironmentFs, from: string, to: string): VerbAnswer => {
  const landed = destination(fs, from, to)
  return Either.map(fs.move(from, to), () => `moved ${held(from)} to ${landed}`)
}

export const copy = (fs: EnvironmentFs, from: string, to: string): VerbAnswer => {
  const landed = destination(fs, from, to)
  return Either.map(fs.copy(from, to), () => `copied ${held(from)} to ${landed}`)
}

/** The extensions of files that are scripts, checked when written. */
export const isScript = (path: string): boolean => /\.(m?js|ts)$/.test(path)

/** Whether a script is a test file (`*.test.js`), run by run_tests. */
export const isTestFile = (path: string): boolean => /\.test\.(m?js|ts)$/.test(path)
