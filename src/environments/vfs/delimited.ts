/**
 * Just enough of a CSV/TSV reader to describe a table: quoted fields (with `""` escapes and line
 * breaks inside quotes), the delimiter guessed from the first line, every row counted but only the
 * first rows kept, so a large file costs one pass and little memory.
 */

/** What a pass over delimited text found. */
export interface DelimitedScan {
  readonly delimiter: string
  /** The first rows, split into fields (the header first). */
  readonly head: ReadonlyArray<ReadonlyArray<string>>
  readonly rows: number
  readonly minFields: number
  readonly maxFields: number
}

/** The delimiter of the first line: tab for `.tsv`, else the most frequent of , ; tab | outside quotes. */
export const guessDelimiter = (text: string, tsv: boolean): string => {
  if (tsv) return "\t"
  const counts = new Map<string, number>([[",", 0], [";", 0], ["\t", 0], ["|", 0]])
  let quoted = false
  for (const char of text.slice(0, 4096)) {
    if (char === "\"") quoted = !quoted
    else if (!quoted && (char === "\n" || char === "\r")) break
    else if (!quoted && counts.has(char)) counts.set(char, (counts.get(char) ?? 0) + 1)
  }
  let best = ","
  for (const [delimiter, count] of counts) if (count > (counts.get(best) ?? 0)) best = delimiter
  return best
}

/** Scans `text`, keeping the first `keep` rows; blank lines are not rows. */
export const scanDelimited = (text: string, delimiter: string, keep: number): DelimitedScan => {
  const head: Array<Array<string>> = []
  let rows = 0
  let minFields = Number.POSITIVE_INFINITY
  let maxFields = 0
  let row: Array<string> = []
  let fields = 0
  let field = ""
  let quoted = false
  let fieldStart = true
  // A blank line has no character at all; it is not a row.
  let touched = false
  // Past the kept rows only the shape matters: fields are counted, not built.
  let keeping = keep > 0
  const endField = () => {
    if (keeping) row.push(field)
    fields += 1
    field = ""
    fieldStart = true
  }
  const endRow = () => {
    if (touched) {
      endField()
      rows += 1
      minFields = Math.min(minFields, fields)
      maxFields = Math.max(maxFields, fields)
      if (keeping) head.push(row)
      keeping = head.length < keep
    }
    row = []
    fields = 0
    field = ""
    fieldStart = true
    touched = false
  }
  for (let i = 0; i < text.length; i++) {
    const char = text[i]
    if (quoted) {
      if (char !== "\"") {
        if (keeping) field += char
      } else if (text[i + 1] === "\"") {
        if (keeping) field += "\""
        i += 1
      } else quoted = false
      continue
    }
    if (char === "\n") {
      endRow()
      continue
    }
    if (char === "\r") continue
    touched = true
    if (char === "\"" && fieldStart) {
      quoted = true
      fieldStart = false
    } else if (char === delimiter) endField()
    else {
      if (keeping) field += char
      fieldStart = false
    }
  }
  endRow()
  return { delimiter, head, rows, minFields: rows === 0 ? 0 : minFields, maxFields }
}
