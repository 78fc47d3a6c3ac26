/**
 * The spreadsheet adapter (`env:spreadsheet`): `.xlsx` and `.csv` files read as rows and written
 * from rows, with SheetJS on the host. Scripts work with plain data (arrays of cells, or objects
 * keyed by the header row); every file goes through the environment's gateway, so zones and byte
 * limits hold for it as for any write.
 */
import { type AdapterFs, defineAdapter } from "../../definitions/environmentModules.js"

/** A cell as scripts see it. */
type Cell = string | number | boolean | null

const formats = { ".xlsx": "xlsx", ".csv": "csv" } as const

const formatOf = (path: string): "xlsx" | "csv" => {
  const dot = path.lastIndexOf(".")
  const extension = dot === -1 ? "" : path.slice(dot).toLowerCase()
  if (extension === ".xlsx" || extension === ".csv") return formats[extension]
  throw new Error(`${path}: env:spreadsheet reads and writes .xlsx and .csv files; name the file with one of those extensions`)
}

const loadSheetJs = () => import("@e965/xlsx")

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

/** Every sheet of a file as rows of cells (a CSV is one sheet). */
const readSheets = async (fs: AdapterFs, path: string, sheet: string | undefined) => {
  const XLSX = await loadSheetJs()
  const format = formatOf(path)
  const workbook = format === "csv"
    ? XLSX.read(fs.readText(path), { type: "string", raw: false })
    : XLSX.read(fs.readFile(path), { type: "array" })
  const names = sheet === undefined ? workbook.SheetNames : workbook.SheetNames.filter((name) => name === sheet)
  if (names.length === 0) throw new Error(`${path} has no sheet "${sheet}"; its sheets are: ${workbook.SheetNames.join(", ")}`)
  return names.map((name) => {
    const rows: ReadonlyArray<unknown> = XLSX.utils.sheet_to_json(workbook.Sheets[name] ?? {}, { header: 1, defval: null, raw: true })
    return { name, rows: rows.map((row) => Array.isArray(row) ? row.map(cellOf) : []) }
  })
}

const writeSheets = async (fs: AdapterFs, path: string, sheets: ReadonlyArray<{ readonly name: string; readonly rows: ReadonlyArray<ReadonlyArray<Cell>> }>) => {
  const XLSX = await loadSheetJs()
  const workbook = XLSX.utils.book_new()
  for (const sheet of sheets) XLSX.utils.book_append_sheet(workbook, XLSX.utils.aoa_to_sheet(sheet.rows.map((row) => [...row])), sheet.name)
  if (formatOf(path) === "csv") {
    if (sheets.length > 1) throw new Error(`${path}: a CSV file holds one sheet; write .xlsx for ${sheets.length} sheets`)
    fs.writeFile(path, XLSX.utils.sheet_to_csv(workbook.Sheets[workbook.SheetNames[0] ?? ""] ?? {}))
  } else {
    const bytes: unknown = XLSX.write(workbook, { type: "array", bookType: "xlsx" })
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

/** Objects as rows under a header of every key, in first-seen order. */
const rowsOfObjects = (value: unknown): ReadonlyArray<ReadonlyArray<Cell>> => {
  if (!Array.isArray(value)) throw new Error("rows must be an array of objects: [{ region: \"north\", total: 12 }]")
  const objects = value.map((row: unknown, index) => {
    if (typeof row !== "object" || row === null || Array.isArray(row)) throw new Error(`rows[${index}] is not an object; writeRows takes objects keyed by column`)
    return Object.entries(row)
  })
  const keys = [...new Set(objects.flatMap((entries) => entries.map(([key]) => key)))]
  return [keys, ...objects.map((entries) => {
    const byKey = new Map(entries)
    return keys.map((key) => cellOf(byKey.get(key)))
  })]
}

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
    readSheets: (path, options) => readSheets(fs, pathArgument(path), sheetOption(options)),
    readRows: async (path, options) => {
      const [first] = await readSheets(fs, pathArgument(path), sheetOption(options))
      return objectsOf(first?.rows ?? [])
    },
    writeSheets: (path, sheets) => writeSheets(fs, pathArgument(path), sheetsArgument(sheets)),
    writeRows: (path, rows, options) => writeSheets(fs, pathArgument(path), [{ name: sheetOption(options) ?? "Sheet1", rows: rowsOfObjects(rows) }])
  })
})
