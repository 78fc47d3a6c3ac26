/**
 * A range of a text file's lines, numbered, so a model reads a large file a piece at a time and
 * can refer to lines by number (as `edit_file` needs the exact text). Capped in lines and in line
 * width, with a note saying how to read on.
 */

import { Data, Either } from "effect"

/** Which lines to show: 1-based and inclusive (whole numbers, `to` not before `from`); the caps have defaults. */
export interface ReadRangeOptions {
  readonly from?: number | undefined
  /** Past the last line reads to the last line. */
  readonly to?: number | undefined
  /** Default 400. */
  readonly maxLines?: number | undefined
  /** Default 2000; longer lines are clipped with a note. */
  readonly maxLineChars?: number | undefined
  /** The most characters shown, notes included (what the model is shown of a result); at least one line is. */
  readonly maxChars?: number | undefined
}

/** Room kept under a result's limit for the note that says what was left out (`read_file`'s, `ls`'s, `grep`'s). */
export const noteRoom = 200

/** `from` is past the last line of the text, which has `lines` lines. */
export class PastTheEnd extends Data.TaggedError("PastTheEnd")<{ readonly lines: number }> {}

/** Lines `from`..`to` of `text`, each prefixed with its number, and a note when more remain. */
export const readRange = (text: string, options: ReadRangeOptions = {}): Either.Either<string, PastTheEnd> => {
  // An empty file has no lines; a last line break ends the last line rather than starting one.
  const lines = text === "" ? [] : text.split(/\r?\n/)
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop()
  const total = lines.length
  if (total === 0 && (options.from ?? 1) === 1) return Either.right("[the file is empty]")
  const maxLines = Math.max(1, Math.floor(options.maxLines ?? 400))
  const maxLineChars = Math.max(1, Math.floor(options.maxLineChars ?? 2000))
  const from = options.from ?? 1
  if (from > total) return Either.left(new PastTheEnd({ lines: total }))
  const asked = Math.min(total, options.to ?? total)
  const byLines = Math.min(asked, from + maxLines - 1)
  const width = String(byLines).length
  const budget = options.maxChars === undefined ? Infinity : Math.max(0, options.maxChars - noteRoom)
  const shown: Array<string> = []
  let used = 0
  for (let number = from; number <= byLines; number++) {
    const line = lines[number - 1] ?? ""
    const room = shown.length === 0 ? Math.max(1, budget - width - 40) : maxLineChars
    const limit = Math.min(maxLineChars, room)
    const clipped = line.length <= limit ? line : `${line.slice(0, limit)}… (${line.length - limit} more characters on this line)`
    const numbered = `${String(number).padStart(width)}| ${clipped}`
    if (shown.length > 0 && used + numbered.length + 1 > budget) break
    shown.push(numbered)
    used += numbered.length + 1
  }
  const to = from + shown.length - 1
  const notes: Array<string> = []
  if (to < byLines) notes.push(`[lines ${from}-${to} of ${total}, as many as the model is shown of a result: read on with from ${to + 1}]`)
  else if (to < asked) notes.push(`[lines ${from}-${to} of ${total}, at most ${maxLines} at a time: read on with from ${to + 1}]`)
  else if (from > 1 || to < total) notes.push(`[lines ${from}-${to} of ${total}]`)
  return Either.right([...shown, ...notes].join("\n"))
}
