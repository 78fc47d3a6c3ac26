/**
 * A file's shape in a few dozen tokens, so a model can decide how to work with it without reading
 * it: the rows and columns of a table, a workbook's sheets, a JSON value's top level, a document's
 * headings, a script's imports, an image's dimensions. Never the file's bytes themselves.
 * A workbook that would inflate past the bound (a ZIP bomb) is described by its sizes only.
 */
import type * as XLSX from "@e965/xlsx"
import { Effect, Either } from "effect"
import { guessDelimiter, scanDelimited } from "./delimited.js"
import { formatBytes } from "./formatBytes.js"
import { extensionOf, isBinary, isWorkbookMediaType, mediaTypeOf } from "./mediaType.js"
import { type SheetJs, sheetJs } from "./sheetJs.js"
import { worksheetLastRow } from "./worksheetRows.js"
import { checkInflatedSize, isZip } from "./zipInflatedSize.js"

const decoder = new TextDecoder()

/** At most `max` items, then how many more there are. */
const some = (items: ReadonlyArray<string>, max: number): string =>
  items.length <= max ? items.join(", ") : `${items.slice(0, max).join(", ")} … and ${items.length - max} more`

const clip = (text: string, max = 40): string => text.length <= max ? text : `${text.slice(0, max - 1)}…`
const count = (n: number, one: string, many = `${one}s`): string => `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`

const numberPattern = /^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/
const datePattern = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$|^\d{1,2}[/.]\d{1,2}[/.]\d{2,4}$/

/** The type most values of a column share: integer, number, boolean, date, text, or empty. */
const columnType = (values: ReadonlyArray<string>): string => {
  const present = values.map((value) => value.trim()).filter((value) => value !== "")
  if (present.length === 0) return "empty"
  if (present.every((value) => /^[-+]?\d+$/.test(value))) return "integer"
  if (present.every((value) => numberPattern.test(value))) return "number"
  if (present.every((value) => /^(true|false|yes|no)$/i.test(value))) return "boolean"
  if (present.every((value) => datePattern.test(value))) return "date"
  return "text"
}

const describeTable = (path: string, bytes: Uint8Array, size: string): string => {
  const text = decoder.decode(bytes)
  const delimiter = guessDelimiter(text, extensionOf(path) === "tsv")
  const scan = scanDelimited(text, delimiter, 200)
  const label = delimiter === "\t" ? "TSV" : delimiter === "," ? "CSV" : `CSV (delimiter ${JSON.stringify(delimiter)})`
  const [header, ...sample] = scan.head
  if (header === undefined) return `${label}, ${size}: no rows`
  const columns = header.map((name, index) => `${clip(name.trim() || `column ${index + 1}`, 30)} (${columnType(sample.map((row) => row[index] ?? ""))})`)
  const ragged = scan.minFields === scan.maxFields ? "" : ` Rows have ${scan.minFields} to ${scan.maxFields} fields.`
  return `${label}, ${size}: ${count(scan.rows - 1, "row")} × ${count(header.length, "column")} (after a header row). ` +
    `Columns: ${some(columns, 15)}.${ragged}`
}

/** Rows SheetJS reads of each sheet for `describe`: the header row and one more. */
const headRows = 2

const worksheets = (names: ReadonlyArray<string>): number => names.filter((name) => /^xl\/worksheets\/[^/]+\.(xml|bin)$/i.test(name)).length

/** Refuses, before SheetJS inflates it, a workbook that would inflate past the bound. */
const refusal = (bytes: Uint8Array, size: string): string | undefined => {
  if (!isZip(bytes)) return undefined
  const checked = checkInflatedSize(bytes)
  if (Either.isRight(checked)) return undefined
  const error = checked.left
  if (error._tag === "ZipUnreadable") return `Spreadsheet, ${size}: could not be read (${clip(error.message, 120)})`
  const sheets = worksheets(error.names)
  return `Spreadsheet workbook, ${size}${sheets === 0 ? "" : `, ${count(sheets, "sheet")}`}: too large to summarise safely: ${error.message}.`
}

/** A workbook's sheets; one that would inflate past the bound is refused before SheetJS is even loaded. */
const describeWorkbook = (bytes: Uint8Array, size: string): Effect.Effect<string> => {
  const refused = refusal(bytes, size)
  return refused === undefined ? Effect.map(sheetJs, (xlsx) => sheetsOf(xlsx, bytes, size)) : Effect.succeed(refused)
}

const sheetsOf = (xlsx: SheetJs, bytes: Uint8Array, size: string): string => {
  let workbook: XLSX.WorkBook
  try {
    // The header rows only; `!fullref` still gives a sheet's whole range when its XML declares it,
    // and `bookFiles` keeps the XML for the sheets that do not.
    workbook = xlsx.read(bytes, { type: "array", sheetRows: headRows, bookFiles: true })
  } catch (error) {
    return `Spreadsheet, ${size}: could not be read (${clip(error instanceof Error ? error.message : String(error), 80)})`
  }
  const sheets = workbook.SheetNames.map((name, index) => {
    const sheet = workbook.Sheets[name]
    const full: unknown = sheet?.["!fullref"]
    const read = typeof full === "string" ? full : sheet?.["!ref"]
    if (sheet === undefined || read === undefined) return `"${clip(name)}" (empty)`
    const range = xlsx.utils.decode_range(read)
    if (typeof full !== "string" && range.e.r - range.s.r + 1 >= headRows) {
      // No <dimension>: SheetJS stopped at the rows it read, so the XML's last row says how many there are.
      const last = worksheetLastRow(workbook, index)
      if (last !== undefined && last - 1 > range.e.r) range.e.r = last - 1
    }
    const ref = xlsx.utils.encode_range(range)
    const rows = range.e.r - range.s.r + 1
    const columns = range.e.c - range.s.c + 1
    const [first] = xlsx.utils.sheet_to_json<ReadonlyArray<unknown>>(sheet, { header: 1, blankrows: false })
    const header = (first ?? []).map((cell) => clip(String(cell ?? "").trim(), 30)).filter((cell) => cell !== "")
    return `"${clip(name)}" ${count(rows, "row")} × ${count(columns, "column")} (${ref})` +
      (header.length === 0 ? "" : `, first row: ${some(header, 12)}`)
  })
  return `Spreadsheet workbook, ${size}, ${count(sheets.length, "sheet")}: ${some(sheets, 8)}.`
}

const shapeOf = (value: unknown): string => {
  if (Array.isArray(value)) return `array of ${value.length}`
  if (value === null) return "null"
  return typeof value
}

const describeJson = (bytes: Uint8Array, size: string): string => {
  let value: unknown
  try {
    value = JSON.parse(decoder.decode(bytes))
  } catch (error) {
    return `JSON, ${size}: not valid JSON (${clip(error instanceof Error ? error.message : String(error), 100)})`
  }
  if (Array.isArray(value)) {
    const kinds = [...new Set(value.map(shapeOf).map((shape) => shape.startsWith("array") ? "array" : shape))]
    const first: unknown = value[0]
    const keys = typeof first === "object" && first !== null && !Array.isArray(first)
      ? `; the first has keys ${some(Object.keys(first).map((key) => clip(key, 30)), 12)}`
      : ""
    return `JSON, ${size}: an array of ${count(value.length, "item")}` + (kinds.length === 0 ? "" : ` (${kinds.join(", ")})`) + `${keys}.`
  }
  if (typeof value === "object" && value !== null) {
    const fields = Object.entries(value).map(([key, field]) => `${clip(key, 30)} (${shapeOf(field)})`)
    return `JSON, ${size}: an object with ${count(fields.length, "key")}: ${some(fields, 12)}.`
  }
  return `JSON, ${size}: a single ${shapeOf(value)}.`
}

const linesOf = (text: string): ReadonlyArray<string> => {
  const lines = text.split(/\r?\n/)
  return lines[lines.length - 1] === "" ? lines.slice(0, -1) : lines
}
const wordsIn = (text: string): number => text.split(/\s+/).filter((word) => word !== "").length

const describeMarkdown = (bytes: Uint8Array, size: string): string => {
  const text = decoder.decode(bytes)
  const lines = linesOf(text)
  let fenced = false
  const headings: Array<string> = []
  for (const line of lines) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced
    else if (!fenced && /^#{1,6}\s/.test(line)) headings.push(clip(line.trim(), 60))
  }
  return `Markdown, ${size}: ${count(lines.length, "line")}, ${count(wordsIn(text), "word")}` +
    (headings.length === 0 ? "; no headings." : `; headings: ${some(headings, 10)}.`)
}

const describeText = (bytes: Uint8Array, size: string): string => {
  const text = decoder.decode(bytes)
  const lines = linesOf(text)
  const longest = lines.reduce((max, line) => Math.max(max, line.length), 0)
  return `Text, ${size}: ${count(lines.length, "line")}, ${count(wordsIn(text), "word")}, longest line ${count(longest, "character")}.`
}

/**
 * A script's statements, matched one line at a time: a multiline pattern whose leading `\s*` spans
 * newlines backtracks over every blank line from every line start, so a file of a million newlines
 * held the event loop for minutes. No pattern here can span a line or try one run of blanks more
 * than once. An import written over several lines is found by its last line (`b } from "env:fs"`),
 * as is a re-export (`export { a } from "./a.js"`): the module depends on both.
 */
const importPattern = /^(?:[ \t]*import[ \t]*|[ \t]*import[ \t][^"']*?[ \t}*]from[ \t]*|[^"']*\}[ \t]*from[ \t]*)["']([^"']+)["']/
const exportPattern = /^[ \t]*export[ \t]+(?:async[ \t]+)?(?:function\*?|const|let|var|class)[ \t]+([A-Za-z_$][\w$]*)/
const defaultPattern = /^[ \t]*export[ \t]+default(?:[ \t]|$)/
const testPattern = /^[ \t]*test\(/

const describeScript = (path: string, bytes: Uint8Array, size: string): string => {
  const lines = linesOf(decoder.decode(bytes))
  const imports: Array<string> = []
  const exported: Array<string> = []
  let hasDefault = false
  let testCount = 0
  for (const line of lines) {
    const imported = importPattern.exec(line)?.[1]
    if (imported !== undefined) imports.push(imported)
    const name = exportPattern.exec(line)?.[1]
    if (name !== undefined) exported.push(name)
    hasDefault ||= defaultPattern.test(line)
    if (testPattern.test(line)) testCount++
  }
  const tests = /\.test\.(m?js|ts)$/.test(path) ? `, ${count(testCount, "test")}` : ""
  const language = extensionOf(path) === "ts" ? "TypeScript" : "JavaScript"
  return `${language} module, ${size}: ${count(lines.length, "line")}${tests}; ` +
    `default export: ${hasDefault ? "yes" : "none"}; ` +
    `imports: ${imports.length === 0 ? "none" : some(imports, 10)}` +
    (exported.length === 0 ? "." : `; other exports: ${some(exported, 10)}.`)
}

const uint16be = (bytes: Uint8Array, at: number): number => ((bytes[at] ?? 0) << 8) | (bytes[at + 1] ?? 0)

/** Width and height from the header bytes, when the header says. */
const dimensions = (mediaType: string, bytes: Uint8Array): readonly [number, number] | undefined => {
  if (mediaType === "image/png" && bytes.byteLength >= 24) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    return [view.getUint32(16), view.getUint32(20)]
  }
  if (mediaType === "image/gif" && bytes.byteLength >= 10) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    return [view.getUint16(6, true), view.getUint16(8, true)]
  }
  if (mediaType === "image/jpeg") {
    // Walk the segments to the first start-of-frame marker, which holds the dimensions.
    let at = 2
    while (at + 9 < bytes.byteLength) {
      if (bytes[at] !== 0xff) return undefined
      const marker = bytes[at + 1] ?? 0
      if (marker === 0xff) {
        at += 1
        continue
      }
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
        return [uint16be(bytes, at + 7), uint16be(bytes, at + 5)]
      }
      at += 2 + uint16be(bytes, at + 2)
    }
  }
  return undefined
}

const describeImage = (mediaType: string, bytes: Uint8Array, size: string): string => {
  const format = mediaType.slice("image/".length).toUpperCase()
  const found = dimensions(mediaType, bytes)
  return found === undefined ? `${format} image, ${size} (dimensions unknown)` : `${format} image, ${size}, ${found[0]} × ${found[1]} pixels`
}

/** A short summary of the file at `path`, by its format; the path itself is not repeated. */
export const describeFile = (path: string, bytes: Uint8Array): Effect.Effect<string> => {
  if (bytes.byteLength === 0) return Effect.succeed("Empty file (0 B)")
  const size = formatBytes(bytes.byteLength)
  const mediaType = mediaTypeOf(path, bytes)
  return isWorkbookMediaType(mediaType) ? describeWorkbook(bytes, size) : Effect.succeed(describeOther(path, bytes, mediaType, size))
}

/** Any file but a workbook, of `mediaType`, `size` long. */
const describeOther = (path: string, bytes: Uint8Array, mediaType: string, size: string): string => {
  switch (mediaType) {
    case "text/csv":
    case "text/tab-separated-values":
      return describeTable(path, bytes, size)
    case "application/json":
      return describeJson(bytes, size)
    case "text/markdown":
      return describeMarkdown(bytes, size)
    case "text/javascript":
    case "text/typescript":
      return describeScript(path, bytes, size)
    case "image/png":
    case "image/jpeg":
    case "image/gif":
      return describeImage(mediaType, bytes, size)
  }
  if (isBinary(bytes)) return `Binary file, ${size} (${mediaType})`
  return describeText(bytes, size)
}
