/**
 * A range of a text file's lines, numbered, so a model reads a large file a piece at a time and
 * can refer to lines by number (as `edit_file` needs the exact text). Capped in lines and in line
 * width, with a note saying how to read on.
 */

/** Which lines to show: 1-based and inclusive; the caps have defaults. */
export interface ReadRangeOptions {
  readonly from?: number | undefined
  readonly to?: number | undefined
  /** Default 400. */
  readonly maxLines?: number | undefined
  /** Default 2000; longer lines are clipped with a note. */
  readonly maxLineChars?: number | undefined
}

/** Lines `from`..`to` of `text`, each prefixed with its number, and a note when more remain. */
export const readRange = (text: string, options: ReadRangeOptions = {}): string => {
  const lines = text.split(/\r?\n/)
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop()
  const total = lines.length
  const maxLines = Math.max(1, Math.floor(options.maxLines ?? 400))
  const maxLineChars = Math.max(1, Math.floor(options.maxLineChars ?? 2000))
  const from = Math.max(1, Math.floor(options.from ?? 1))
  if (from > total) return `(the file has ${total} ${total === 1 ? "line" : "lines"}; nothing from line ${from})`
  const asked = Math.min(total, Math.floor(options.to ?? total))
  const to = Math.min(asked, from + maxLines - 1)
  if (to < from) return `(to ${asked} is before from ${from}: nothing to show)`
  const width = String(to).length
  const shown = lines.slice(from - 1, to).map((line, index) => {
    const clipped = line.length <= maxLineChars ? line : `${line.slice(0, maxLineChars)}… (${line.length - maxLineChars} more characters on this line)`
    return `${String(from + index).padStart(width)}| ${clipped}`
  })
  const notes: Array<string> = []
  if (to < asked) notes.push(`[lines ${from}-${to} of ${total}, at most ${maxLines} at a time: read on with from ${to + 1}]`)
  else if (from > 1 || to < total) notes.push(`[lines ${from}-${to} of ${total}]`)
  return [...shown, ...notes].join("\n")
}
