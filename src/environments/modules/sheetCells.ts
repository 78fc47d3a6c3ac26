/**
 * A worksheet's rows as far as its cells go. SheetJS gives a sheet the range it declares (an .xlsx
 * `<dimension ref="A1:XFD1048576"/>` is taken as is) or, for CSV, the widest row times the row
 * count, and `sheet_to_json` with a `defval` pads every row to that range: a 1 KB workbook or a
 * ragged 200 KB CSV would make billions of cells on the host's main thread. Here a sheet (read in
 * dense mode, so its rows are arrays that end at their last cell) is measured by the cells it
 * holds, and each row is read to its own last cell only.
 */
import type * as XLSX from "@e965/xlsx"
import type { SheetJs } from "../vfs/sheetJs.js"

type Rows = ReadonlyArray<ReadonlyArray<XLSX.CellObject | undefined> | undefined>

/** Where a sheet's rows start, and how wide each row is to its last cell holding a value. */
export interface SheetExtent {
  readonly firstRow: number
  readonly firstColumn: number
  /** One width a row, from `firstRow` to the last row holding a value; 0 for a blank row. */
  readonly widths: ReadonlyArray<number>
  /** What reading it builds: each row's cells, a blank row counted as one (it is still a row). */
  readonly cells: number
}

const holdsValue = (cell: XLSX.CellObject | undefined): boolean => cell !== undefined && cell !== null && cell.t !== undefined && cell.t !== "z"

/** The extent of a sheet read with `dense: true`, from the cells present rather than its declared range. */
export const sheetExtent = (xlsx: SheetJs, sheet: XLSX.WorkSheet): SheetExtent => {
  const ref = sheet["!ref"]
  const rows: Rows = sheet["!data"] ?? []
  if (ref === undefined) return { firstRow: 0, firstColumn: 0, widths: [], cells: 0 }
  const { s: start } = xlsx.utils.decode_range(ref)
  const widths: Array<number> = []
  let lastFilled = -1
  for (let r = start.r; r < rows.length; r++) {
    const row = rows[r] ?? []
    let end = row.length - 1
    while (end >= start.c && !holdsValue(row[end])) end--
    const width = Math.max(0, end - start.c + 1)
    widths.push(width)
    if (width > 0) lastFilled = widths.length - 1
  }
  widths.length = lastFilled + 1
  return { firstRow: start.r, firstColumn: start.c, widths, cells: widths.reduce((sum, width) => sum + Math.max(width, 1), 0) }
}

/**
 * The rows of `extent` as SheetJS gives them (`raw` values, `null` for an empty cell within a row),
 * each to its last cell. Rows of one width are read in one call, as most of a sheet's rows are.
 */
export const rowsWithin = (xlsx: SheetJs, sheet: XLSX.WorkSheet, extent: SheetExtent): ReadonlyArray<unknown> => {
  const rows: Array<unknown> = []
  let from = 0
  while (from < extent.widths.length) {
    const width = extent.widths[from] ?? 0
    let to = from
    while (to + 1 < extent.widths.length && extent.widths[to + 1] === width) to++
    const range = {
      s: { r: extent.firstRow + from, c: extent.firstColumn },
      e: { r: extent.firstRow + to, c: extent.firstColumn + width - 1 }
    }
    for (const row of xlsx.utils.sheet_to_json<unknown>(sheet, { header: 1, defval: null, raw: true, range })) rows.push(row)
    from = to + 1
  }
  return rows
}
