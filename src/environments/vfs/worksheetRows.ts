/**
 * A worksheet's last row, read from its XML. `describe` asks SheetJS for a sheet's first rows only
 * (`sheetRows`), and SheetJS then gives the sheet's whole range only when the XML declares it in a
 * <dimension>; without one (some writers leave it out) it reports just the rows it read. The XML
 * says the rest: the `r` of its last <row>, or, for rows without numbers, how many there are.
 */
import type * as XLSX from "@e965/xlsx"

const decoder = new TextDecoder()

/** The bytes of a part of the workbook, from SheetJS's `bookFiles` (not in its types). */
const partOf = (workbook: XLSX.WorkBook, path: string): Uint8Array | undefined => {
  const files: unknown = "files" in workbook ? workbook.files : undefined
  if (typeof files !== "object" || files === null || !(path in files)) return undefined
  const file: unknown = Object.getOwnPropertyDescriptor(files, path)?.value
  const content: unknown = typeof file === "object" && file !== null && "content" in file ? file.content : undefined
  return content instanceof Uint8Array ? content : undefined
}

/** Where the workbook keeps sheet `index`: its relationship's target, as SheetJS resolves it. */
const sheetPath = (workbook: XLSX.WorkBook, index: number): string => {
  const fallback = `xl/worksheets/sheet${index + 1}.xml`
  const props: unknown = workbook.Workbook?.Sheets?.[index]
  const id = typeof props === "object" && props !== null && "id" in props && typeof props.id === "string" ? props.id : undefined
  const rels = partOf(workbook, "xl/_rels/workbook.xml.rels")
  if (id === undefined || rels === undefined) return fallback
  for (const [tag] of decoder.decode(rels).matchAll(/<(?:\w+:)?Relationship\b[^>]*>/g)) {
    if (/\bId="([^"]*)"/.exec(tag)?.[1] !== id) continue
    const target = /\bTarget="([^"]*)"/.exec(tag)?.[1]
    if (target === undefined) return fallback
    const inXl = `xl/${target.replace(/^\/?xl\//, "")}`
    return partOf(workbook, inXl) !== undefined ? inXl : target.replace(/^\//, "")
  }
  return fallback
}

const isTagEnd = (byte: number | undefined): boolean => byte === 0x20 || byte === 0x3e || byte === 0x2f || byte === 0x09 || byte === 0x0a || byte === 0x0d

/** The 1-based number of the last row in a worksheet's XML; 0 for none, undefined when it is no worksheet. */
export const lastRowOf = (xml: Uint8Array): number | undefined => {
  const text = Buffer.from(xml.buffer, xml.byteOffset, xml.byteLength)
  const data = text.indexOf("sheetData")
  if (data < 0) return undefined
  // A namespaced sheet (<x:sheetData>) prefixes its rows the same way.
  const prefix = text.toString("latin1", text.lastIndexOf("<", data) + 1, data)
  const tag = `<${/^(\w+:)?$/.test(prefix) ? prefix : ""}row`
  // `<rowBreaks` starts like a row: a row's tag name ends at a space, `>` or `/`.
  const isRow = (at: number) => isTagEnd(text[at + tag.length])
  let last = text.lastIndexOf(tag)
  while (last > data && !isRow(last)) last = text.lastIndexOf(tag, last - 1)
  if (last <= data) return 0
  const close = text.indexOf(">", last)
  const attributes = text.toString("latin1", last, close < 0 ? last + tag.length : close)
  const numbered = /\sr="(\d+)"/.exec(attributes)?.[1]
  if (numbered !== undefined) return Number(numbered)
  // Rows without numbers follow one another.
  let rows = 0
  for (let at = text.indexOf(tag, data); at >= 0; at = text.indexOf(tag, at + tag.length)) if (isRow(at)) rows++
  return rows
}

/** The last row (1-based) of sheet `index` of a workbook read with `bookFiles: true`, when its XML is there. */
export const worksheetLastRow = (workbook: XLSX.WorkBook, index: number): number | undefined => {
  const xml = partOf(workbook, sheetPath(workbook, index))
  return xml === undefined ? undefined : lastRowOf(xml)
}
