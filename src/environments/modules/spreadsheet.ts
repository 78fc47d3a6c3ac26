/**
 * The spreadsheet adapter (`env:spreadsheet`): `.xlsx` and `.csv` files read as rows and written
 * from rows, with SheetJS on the host. Scripts work with plain data (arrays of cells, or objects
 * keyed by the header row); every file goes through the environment's gateway, so zones and byte
 * limits hold for it as for any write.
 */
import { Either } from "effect"
import { type AdapterFs, defineAdapter } from "../../definitions/environmentModules.js"
import { checkInflatedSize, isZip } from "../vfs/zipInflatedSize.js"
import { loadSheetJs } from "../vfs/sheetJs.js"
import { rowsWithin, sheetExtent } from "./sheetCells.js"

/** A cell as scripts see it. */
type Cell = string | number | boolean | null

/**
 * The most cells one write builds, or one read returns. SheetJS holds a workbook as an object per cell on the host's
 * main thread (about 1 KB each while writing), so a large write blocks every other request for
 * seconds before the gateway's byte limit could refuse it; this refuses it before anything is
 * built. At the default 5 MB file limit an .xlsx holds about 400,000 cells (12 bytes a cell,
 * compressed) and a .csv about a million, so the caps refuse little that the limit would take. A
 * read is counted from the cells a file holds, not the range it declares (see sheetCells).
 */
const maxCells = { xlsx: 500_000, csv: 1_000_000 } as const

const formats = { ".xlsx": "xlsx", ".csv": "csv" } as const

const formatOf = (path: string): "xlsx" | "csv" => {
  const dot = path.lastIndexOf(".")
  const extension = dot === -1 ? "" : path.slice(dot).toLowerCase()
  if (extension === ".xlsx" || extension === ".csv") return formats[extension]
  throw new Error(`${path}: env:spreadsheet reads and writes .xlsx and .csv files; name the file with one of those extensions`)
}

const isCell = (value: unknown): value is Cell =>
  value === null || typeof value === "string" || typeof value === "number" || typeof value === "boolean"

/** A value a script handed in as a cell: dates as ISO text, anything else as JSON text. */
const cellOf = (value: unknown): Cell =>
  isCell(value) ? value : value === undefined ? null : value instanceof Date ? value.toISOString() : JSON.stringify(value)

const rowsArgument = (value: unknown, what: string): ReadonlyArray<ReadonlyArray<Cell>> => {
  if (!Array.isArray(value) || !value.every(Array.isArray)) throw new Error(`${what} must be an array of rows, each an array of cells: [["region", "total"], ["north", 12]]`)
  return value.map((row: ReadonlyArray<unknown>) => row.map(cellOf))
}

const sheetsArgument = (value: unknown): ReadonlyArray<{ readonly name: string; readonly rows: ReadonlyArray<ReadonlyArray<Cell>> }> => {
  if (!Array.isArray(value) || value.length === 0) throw new Error("sheets must be a non-empty array: [{ name: \"Summary\", rows: [[\"region\", \"total\"]] }]")
  return value.map((sheet: unknown, index) => {
    if (typeof sheet !== "object" || sheet === null || !("rows" in sheet)) throw new Error(`sheets[${index}] needs rows: { name: "Summary", rows: [[...]] }`)
    const name = "name" in sheet && typeof sheet.name === "string" && sheet.name !== "" ? sheet.name : `Sheet${index + 1}`
    return { name, rows: rowsArgument(sheet.rows, `sheets[${index}].rows`) }
  })
}

const sheetOption = (options: unknown): string | undefined =>
  typeof options === "object" && options !== null && "sheet" in options && typeof options.sheet === "string" ? options.sheet : undefined

const pathArgument = (value: unknown): string => {
  if (typeof value !== "string" || value === "") throw new Error("the first argument is the file's path, e.g. \"/inbox/sales.csv\"")
  return value
}

/** The bytes of a workbook SheetJS may inflate: a ZIP bomb is refused before it is parsed. */
const workbookBytes = (fs: AdapterFs, path: string): Uint8Array => {
  const bytes = fs.readFile(path)
  if (!isZip(bytes)) return bytes
  const checked = checkInflatedSize(bytes)
  if (Either.isRight(checked)) return bytes
  throw new Error(checked.left._tag === "ZipTooLarge"
    ? `${path} is too large to read safely: ${checked.left.message}; ask for it as .csv, or split it into smaller workbooks`
    : `${path} is not a readable .xlsx file: ${checked.left.message}`)
}

/** The text of a CSV; SheetJS would read a ZIP named .csv as a workbook, past the bomb check. */
const csvText = (fs: AdapterFs, path: string): string => {
  const text = fs.readText(path)
  if (isZip(Uint8Array.from(text.slice(0, 4), (char) => char.charCodeAt(0)))) {
    throw new Error(`${path} holds a ZIP file (an .xlsx workbook?), not CSV text: copy it to a path ending in .xlsx and read that`)
  }
  return text
}

/** Refuses a read of more cells than `format` allows, counted before any row is built. */
const checkReadCells = (path: string, format: "xlsx" | "csv", cells: number, sheets: number) => {
  if (cells <= maxCells[format]) return
  throw new Error(
    `${path}: ${cells.toLocaleString("en-US")} cells (each row to its last filled cell) is more than env:spreadsheet reads from one ` +
      `${format === "csv" ? "CSV" : ".xlsx"} file (${maxCells[format].toLocaleString("en-US")}); ask for it split into smaller files` +
      (sheets > 1 ? ", or read one sheet at a time ({ sheet: \"Name\" })" : "")
  )
}

/** Every sheet of a file as rows of cells (a CSV is one sheet), each row to its last filled cell. */
const readSheets = async (fs: AdapterFs, path: string, sheet: string | undefined) => {
  const format = formatOf(path)
  const source = format === "csv" ? csvText(fs, path) : workbookBytes(fs, path)
  const XLSX = await loadSheetJs()
  // Rows are read as raw values, so SheetJS need not format a text for each cell (a quarter faster);
  // dense, so a row ends at its last cell and the sheet's extent is what it holds (see sheetCells).
  const options = { cellText: false, cellHTML: false, dense: true }
  const workbook = typeof source === "string"
    ? XLSX.read(source, { type: "string", raw: false, ...options })
    : XLSX.read(source, { type: "array", ...options })
  const names = sheet === undefined ? workbook.SheetNames : workbook.SheetNames.filter((name) => name === sheet)
  if (names.length === 0) throw new Error(`${path} has no sheet "${sheet}"; its sheets are: ${workbook.SheetNames.join(", ")}`)
  const sheets = names.map((name) => {
    const worksheet = workbook.Sheets[name] ?? {}
    return { name, worksheet, extent: sheetExtent(XLSX, worksheet) }
  })
  checkReadCells(path, format, sheets.reduce((sum, { extent }) => sum + extent.cells, 0), sheets.length)
  return sheets.map(({ extent, name, worksheet }) => ({
    name,
    rows: rowsWithin(XLSX, worksheet, extent).map((row) => Array.isArray(row) ? row.map(cellOf) : [])
  }))
}

/** Refuses a write of more cells than `format` allows, before anything is built. */
const checkCells = (path: string, format: "xlsx" | "csv", cells: number) => {
  if (cells <= maxCells[format]) return
  throw new Error(
    `${path}: ${cells.toLocaleString("en-US")} cells is more than env:spreadsheet writes to one ${format === "csv" ? "CSV" : ".xlsx"} file ` +
      `(${maxCells[format].toLocaleString("en-US")}); write fewer rows per file (split them across files)` +
      (format === "xlsx" ? `, or write .csv, which holds up to ${maxCells.csv.toLocaleString("en-US")} cells` : "")
  )
}

/** The cells of `writeSheets`' sheets as a script handed them in, counted without copying them. */
const cellsOf = (sheets: unknown): number => {
  let cells = 0
  if (!Array.isArray(sheets)) return cells
  for (const sheet of sheets) {
    const rows: unknown = typeof sheet === "object" && sheet !== null && "rows" in sheet ? sheet.rows : undefined
    if (Array.isArray(rows)) for (const row of rows) cells += Array.isArray(row) ? row.length : 0
  }
  return cells
}

const writeSheets = async (fs: AdapterFs, path: string, sheets: ReadonlyArray<{ readonly name: string; readonly rows: ReadonlyArray<ReadonlyArray<Cell>> }>) => {
  const format = formatOf(path)
  if (format === "csv" && sheets.length > 1) throw new Error(`${path}: a CSV file holds one sheet; write .xlsx for ${sheets.length} sheets`)
  const XLSX = await loadSheetJs()
  const workbook = XLSX.utils.book_new()
  for (const sheet of sheets) XLSX.utils.book_append_sheet(workbook, XLSX.utils.aoa_to_sheet(sheet.rows.map((row) => [...row])), sheet.name)
  if (format === "csv") {
    fs.writeFile(path, XLSX.utils.sheet_to_csv(workbook.Sheets[workbook.SheetNames[0] ?? ""] ?? {}))
  } else {
    // Compressed: about a third of the stored size, so more fits under the file limit.
    const bytes: unknown = XLSX.write(workbook, { type: "array", bookType: "xlsx", compression: true })
    if (!(bytes instanceof ArrayBuffer)) throw new Error("SheetJS did not return the workbook's bytes")
    fs.writeFile(path, new Uint8Array(bytes))
  }
  return { path, sheets: sheets.map((sheet) => ({ name: sheet.name, rows: sheet.rows.length })) }
}

/** Rows as objects keyed by the header row. */
const objectsOf = (rows: ReadonlyArray<ReadonlyArray<Cell>>): ReadonlyArray<Record<string, Cell>> => {
  const [header = [], ...body] = rows
  const keys = header.map((cell, index) => cell === null || cell === "" ? `column${index + 1}` : String(cell))
  return body.map((row) => Object.fromEntries(keys.map((key, index) => [key, row[index] ?? null])))
}

/** The objects `writeRows` was handed and every key among them, in first-seen order, without copying them. */
const objectColumns = (value: unknown): { readonly objects: ReadonlyArray<object>; readonly keys: ReadonlyArray<string> } => {
  if (!Array.isArray(value)) throw new Error("rows must be an array of objects: [{ region: \"north\", total: 12 }]")
  const keys = new Set<string>()
  const objects: Array<object> = []
  for (const [index, row] of value.entries()) {
    if (typeof row !== "object" || row === null || Array.isArray(row)) throw new Error(`rows[${index}] is not an object; writeRows takes objects keyed by column`)
    for (const key in row) if (Object.hasOwn(row, key)) keys.add(key)
    objects.push(row)
  }
  return { objects, keys: [...keys] }
}

/** Objects as rows under a header of `keys`. */
const rowsOfObjects = (objects: ReadonlyArray<object>, keys: ReadonlyArray<string>): ReadonlyArray<ReadonlyArray<Cell>> =>
  [keys, ...objects.map((row) => keys.map((key) => cellOf(Object.getOwnPropertyDescriptor(row, key)?.value)))]

const types = `/** A cell as read from or written to a spreadsheet. */
export type Cell = string | number | boolean | null

/** Every sheet (a CSV is one sheet) as rows of cells; { sheet } reads one by name. */
export function readSheets(path: string, options?: { sheet?: string }): Promise<Array<{ name: string; rows: Cell[][] }>>

/** The first (or the named) sheet as objects keyed by its header row. */
export function readRows(path: string, options?: { sheet?: string }): Promise<Array<Record<string, Cell>>>

/** Writes .xlsx (any number of sheets) or .csv (one sheet) from rows of cells. */
export function writeSheets(path: string, sheets: Array<{ name: string; rows: Cell[][] }>): Promise<{ path: string; sheets: Array<{ name: string; rows: number }> }>

/** Writes objects as rows under a header of their keys (.xlsx or .csv). */
export function writeRows(path: string, rows: Array<Record<string, Cell>>, options?: { sheet?: string }): Promise<{ path: string; sheets: Array<{ name: string; rows: number }> }>
`

const readme = `Read and write spreadsheets (.xlsx and .csv) as plain rows.

\`\`\`js
import { readRows, writeSheets } from "env:spreadsheet"

export default async function () {
  const sales = await readRows("/inbox/sales.csv")          // [{ region: "north", amount: 12 }, ...]
  const totals = {}
  for (const row of sales) totals[row.region] = (totals[row.region] ?? 0) + Number(row.amount)
  await writeSheets("/out/summary.xlsx", [{ name: "Totals", rows: [["region", "total"], ...Object.entries(totals)] }])
  return totals
}
\`\`\`

Use \`describe\` on a spreadsheet to see its sheets and columns before reading it.`

/** `env:spreadsheet`: .xlsx and .csv as rows. */
export const spreadsheet = defineAdapter({
  name: "spreadsheet",
  description: "read and write .xlsx and .csv files as rows (SheetJS)",
  types,
  readme,
  create: (fs) => ({
    readSheets: async (path, options) => readSheets(fs, pathArgument(path), sheetOption(options)),
    readRows: async (path, options) => {
      const [first] = await readSheets(fs, pathArgument(path), sheetOption(options))
      return objectsOf(first?.rows ?? [])
    },
    // Counted before the rows are copied or a workbook is built: a refused write costs nothing.
    writeSheets: async (path, sheets) => {
      const target = pathArgument(path)
      checkCells(target, formatOf(target), cellsOf(sheets))
      return writeSheets(fs, target, sheetsArgument(sheets))
    },
    writeRows: async (path, rows, options) => {
      const target = pathArgument(path)
      const { keys, objects } = objectColumns(rows)
      checkCells(target, formatOf(target), (objects.length + 1) * keys.length)
      return writeSheets(fs, target, [{ name: sheetOption(options) ?? "Sheet1", rows: rowsOfObjects(objects, keys) }])
    }
  })
})
