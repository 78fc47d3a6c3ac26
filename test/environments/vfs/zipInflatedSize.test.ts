import { describe, expect, it } from "@effect/vitest"
import * as XLSX from "@e965/xlsx"
import { Effect, Either } from "effect"
import { describeFile } from "../../../src/environments/vfs/describe.js"
import { checkInflatedSize, inflationLimits, isZip, zipInflatedSize } from "../../../src/environments/vfs/zipInflatedSize.js"
import { previewOf } from "../../../src/transports/http/handlers/EnvironmentsLive.js"
import { bombRows, emptyBlocks, numberedRows, sheetXml, workbookOf, zip64Record, zipOf } from "./zipFixtures.js"

const xlsxType = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

const refusal = (bytes: Uint8Array, limits = inflationLimits) => {
  const checked = checkInflatedSize(bytes, limits)
  if (Either.isRight(checked)) throw new Error(`expected a refusal, got ${JSON.stringify(checked.right)}`)
  return checked.left
}

/** 400,000 rows in about 50 KB: the shape of the reviewer's 658 KB workbook, smaller. */
const bomb = () => workbookOf([{ name: "Bomb", xml: sheetXml(bombRows(400_000)) }])

describe("zipInflatedSize", () => {
  it("reads each entry's inflated size from the headers, without inflating", () => {
    const sheet = sheetXml(numberedRows(100))
    const bytes = workbookOf([{ name: "Data", xml: sheet }])
    const found = Either.getOrThrow(zipInflatedSize(bytes))
    expect(found.names).toEqual(["[Content_Types].xml", "_rels/.rels", "xl/workbook.xml", "xl/_rels/workbook.xml.rels", "xl/worksheets/sheet1.xml"])
    expect(found.fileBytes).toBe(bytes.byteLength)
    expect(found.inflatedBytes).toBeGreaterThan(sheet.length)
    expect(found.inflatedBytes).toBeLessThan(sheet.length + 3000)
    // What the headers declare is what the check goes by, before any stream is inflated.
    expect(Either.getOrThrow(zipInflatedSize(workbookOf([{ name: "Data", xml: sheet, declaredSize: 70_000_000 }]))).inflatedBytes).toBeGreaterThan(70_000_000)
  })

  it("accepts a workbook SheetJS wrote, compressed or not", () => {
    const workbook = XLSX.utils.book_new()
    XLSX.utils.book_append_sheet(workbook, XLSX.utils.aoa_to_sheet([["a", "b"], ...Array.from({ length: 500 }, (_, i) => [i, `row ${i}`])]), "S")
    for (const compression of [false, true]) {
      const bytes = new Uint8Array(XLSX.write(workbook, { type: "array", bookType: "xlsx", compression }))
      expect(isZip(bytes)).toBe(true)
      const checked = Either.getOrThrow(checkInflatedSize(bytes))
      expect(checked.names).toContain("xl/worksheets/sheet1.xml")
    }
  })

  it("refuses a ZIP bomb: 400,000 rows in 50 KB inflate hundreds of times the file", () => {
    const bytes = bomb()
    expect(bytes.byteLength).toBeLessThan(100_000)
    const refused = refusal(bytes)
    expect(refused._tag).toBe("ZipTooLarge")
    expect(refused.message).toMatch(/it would inflate to 16\.\d MB, \d+ times its size \(a workbook may inflate to 20 times its size\)/)
  })

  it("refuses past the absolute bound, and ZIP64 sizes as too large", () => {
    const bytes = workbookOf([{ name: "Data", xml: sheetXml(numberedRows(2000)) }])
    const refused = refusal(bytes, { maxInflatedBytes: 50_000, maxRatio: Infinity, ratioFloorBytes: 0 })
    expect(refused.message).toContain("past the 50 KB a workbook may inflate to")
    const zip64 = refusal(workbookOf([{ name: "Data", xml: sheetXml(numberedRows(10)), declaredSize: 0xffffffff }]))
    expect(zip64._tag).toBe("ZipTooLarge")
    expect(zip64.message).toContain("ZIP64")
  })

  it("takes the sizes of ZIP64 records as SheetJS does: a true one passes, a huge one in the local header is refused", () => {
    const data = sheetXml(numberedRows(10))
    const entry = (localExtra: Uint8Array) => zipOf([{ name: "xl/worksheets/sheet1.xml", data, localExtra, centralExtra: zip64Record(data.length, 0) }])
    expect(Either.getOrThrow(checkInflatedSize(entry(zip64Record(data.length, 0)))).inflatedBytes).toBe(data.length)
    // SheetJS would allocate the local header's size before inflating: 1 TB here.
    const huge = refusal(entry(zip64Record(2 ** 40, 0)))
    expect(huge._tag).toBe("ZipTooLarge")
    expect(huge.message).toContain("it would inflate to 1.1 TB")
  })

  it("catches headers that understate: the stream inflating past its declared size is refused", () => {
    const liar = workbookOf([{ name: "Bomb", xml: sheetXml(bombRows(400_000)), declaredSize: 1000 }])
    expect(Either.getOrThrow(zipInflatedSize(liar)).inflatedBytes).toBeLessThan(5000)
    const refused = refusal(liar)
    expect(refused._tag).toBe("ZipTooLarge")
    expect(refused.message).toBe("xl/worksheets/sheet1.xml inflates past the 1 KB its headers declare, which is how ZIP bombs hide")
  })

  it("refuses entries that share their compressed data, which a parser would inflate again and again", () => {
    const shared = zipOf([{ name: "xl/worksheets/sheet1.xml", data: "", deflated: emptyBlocks(40_000) }], { centralCopies: 50 })
    const refused = refusal(shared)
    expect(refused._tag).toBe("ZipUnreadable")
    expect(refused.message).toContain("share their compressed data")
    // One copy of the same entry is fine.
    Either.getOrThrow(checkInflatedSize(zipOf([{ name: "xl/worksheets/sheet1.xml", data: "", deflated: emptyBlocks(40_000) }])))
  })

  it("says why bytes are not a readable ZIP", () => {
    expect(refusal(new TextEncoder().encode("PK\x03\x04 and nothing else")).message).toContain("no end-of-central-directory record")
    const broken = workbookOf([{ name: "Data", xml: sheetXml(numberedRows(10)) }])
    // The first entry's stream starts after its local header; a first byte of 0xff is a reserved block type.
    broken[30 + "[Content_Types].xml".length] = 0xff
    const refused = refusal(broken)
    expect(refused._tag).toBe("ZipUnreadable")
    expect(refused.message).toContain("[Content_Types].xml is damaged")
    expect(isZip(new TextEncoder().encode("a,b\n"))).toBe(false)
  })
})

describe("readers of workbooks on the host", () => {
  it.effect("describe sums up a ZIP bomb by its sizes and sheet count, without parsing it", () =>
    Effect.gen(function*() {
      const bytes = bomb()
      const started = Date.now()
      const summary = yield* describeFile("/inbox/bomb.xlsx", bytes)
      expect(Date.now() - started).toBeLessThan(500)
      expect(summary).toMatch(/^Spreadsheet workbook, \d+\.\d KB, 1 sheet: too large to summarise safely: it would inflate to 16\.\d MB/)
      expect(yield* describeFile("/inbox/liar.xlsx", workbookOf([{ name: "B", xml: sheetXml(bombRows(400_000)), declaredSize: 1000 }])))
        .toContain("inflates past the 1 KB its headers declare")
    }))

  it.effect("the inspector's preview shows nothing but the download for a ZIP bomb, and the table for a workbook", () =>
    Effect.gen(function*() {
      const bytes = bomb()
      const started = Date.now()
      expect(yield* previewOf("/out/bomb.xlsx", xlsxType, bytes)).toEqual({ kind: "none" })
      expect(Date.now() - started).toBeLessThan(500)
      const table = yield* previewOf("/out/data.xlsx", xlsxType, workbookOf([{ name: "Data", xml: sheetXml(numberedRows(3)) }]))
      expect(table).toEqual({ kind: "table", sheets: [{ name: "Data", rows: [["1", "1"], ["2", "2"], ["3", "3"]], truncated: false }] })
    }))
})
