import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import type { AdapterFunctions } from "../../src/definitions/environmentModules.js"
import { spreadsheet } from "../../src/environments/modules/spreadsheet.js"
import { adapterFs } from "../../src/environments/scriptModules.js"
import { environmentFs } from "../../src/environments/vfs/EnvironmentFs.js"
import { memoryVfs } from "../../src/environments/vfs/Vfs.js"
import { checkInflatedSize, zipInflatedSize } from "../../src/environments/vfs/zipInflatedSize.js"
import { bombRows, numberedRows, sheetXml, workbookOf } from "./vfs/zipFixtures.js"

const text = (value: string) => new TextEncoder().encode(value)

const open = (files: ReadonlyArray<readonly [string, Uint8Array]> = [], limits = { maxFileBytes: 5_000_000, maxTotalBytes: 50_000_000 }) => {
  const fs = environmentFs(memoryVfs(new Map([["/inbox/sales.csv", text("region,amount,paid\nnorth,12,TRUE\nsouth,7.5,FALSE\n")], ...files])), {
    readOnly: ["/std", "/inbox"],
    limits
  })
  const functions: AdapterFunctions = spreadsheet.create(adapterFs(fs), { runId: "r1", agent: "a", instanceId: "i", conversationId: "c" })
  const call = async (fn: string, ...args: ReadonlyArray<unknown>): Promise<unknown> => {
    const found = functions[fn]
    if (found === undefined) throw new Error(`no ${fn}`)
    return await found(...args)
  }
  return { fs, call }
}

/** The message a refused call rejects with. */
const refusal = async (answer: Promise<unknown>): Promise<string> => {
  try {
    await answer
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
  throw new Error("the call was expected to be refused")
}

const rowsOfCells = (count: number, columns: number) => Array.from({ length: count }, (_, row) => Array.from({ length: columns }, (_, column) => row * columns + column))

describe("env:spreadsheet", () => {
  it("reads a CSV's rows as objects keyed by its header row, with typed cells", async () => {
    const { call } = open()
    expect(await call("readRows", "/inbox/sales.csv")).toEqual([
      { region: "north", amount: 12, paid: true },
      { region: "south", amount: 7.5, paid: false }
    ])
    expect(await call("readSheets", "/inbox/sales.csv")).toEqual([{
      name: "Sheet1",
      rows: [["region", "amount", "paid"], ["north", 12, true], ["south", 7.5, false]]
    }])
  })

  it("writes a compressed .xlsx of several sheets and reads it back, whole or one sheet by name", async () => {
    const { call, fs } = open()
    const rows = [["id", "label"], ...Array.from({ length: 2000 }, (_, i) => [i, `row ${i % 7}`])]
    expect(await call("writeSheets", "/out/book.xlsx", [{ name: "Data", rows }, { name: "Notes", rows: [["checked", true], ["when", new Date(Date.UTC(2024, 0, 5))]] }]))
      .toEqual({ path: "/out/book.xlsx", sheets: [{ name: "Data", rows: 2001 }, { name: "Notes", rows: 2 }] })
    const bytes = Either.getOrThrow(fs.readFile("/out/book.xlsx"))
    // Deflated: the file is a fraction of what it inflates to (stored, it would be about the same).
    expect(bytes.byteLength * 2).toBeLessThan(Either.getOrThrow(zipInflatedSize(bytes)).inflatedBytes)
    const sheets = await call("readSheets", "/out/book.xlsx")
    expect(sheets).toEqual([
      { name: "Data", rows },
      { name: "Notes", rows: [["checked", true], ["when", "2024-01-05T00:00:00.000Z"]] }
    ])
    expect(await call("readRows", "/out/book.xlsx", { sheet: "Notes" })).toEqual([{ checked: "when", true: "2024-01-05T00:00:00.000Z" }])
    expect(await refusal(call("readSheets", "/out/book.xlsx", { sheet: "Nope" }))).toBe(`/out/book.xlsx has no sheet "Nope"; its sheets are: Data, Notes`)
  })

  it("writes objects as rows under a header of every key, and a CSV of one sheet", async () => {
    const { call, fs } = open()
    expect(await call("writeRows", "/out/totals.csv", [{ region: "north", total: 12 }, { region: "south", note: "late" }]))
      .toEqual({ path: "/out/totals.csv", sheets: [{ name: "Sheet1", rows: 3 }] })
    expect(Either.getOrThrow(fs.readText("/out/totals.csv"))).toBe("region,total,note\nnorth,12,\nsouth,,late")
    expect(await call("readRows", "/out/totals.csv")).toEqual([{ region: "north", total: 12, note: null }, { region: "south", total: null, note: "late" }])
    const message = await refusal(call("writeSheets", "/out/two.csv", [{ name: "A", rows: [[1]] }, { name: "B", rows: [[2]] }]))
    expect(message).toBe("/out/two.csv: a CSV file holds one sheet; write .xlsx for 2 sheets")
    expect(fs.vfs.exists("/out/two.csv")).toBe(false)
  })

  it("refuses a path that is neither .xlsx nor .csv, naming both", async () => {
    const { call, fs } = open()
    expect(await refusal(call("writeSheets", "/out/report.ods", [{ name: "A", rows: [[1]] }])))
      .toBe("/out/report.ods: env:spreadsheet reads and writes .xlsx and .csv files; name the file with one of those extensions")
    expect(await refusal(call("readRows", "/inbox/sales.txt"))).toContain("name the file with one of those extensions")
    expect(fs.vfs.exists("/out/report.ods")).toBe(false)
  })

  it("refuses a write of too many cells at once, before building anything, and says what to do", async () => {
    const { call, fs } = open()
    const many = rowsOfCells(60_001, 10)
    const started = Date.now()
    const message = await refusal(call("writeSheets", "/out/big.xlsx", [{ name: "Big", rows: many }]))
    expect(Date.now() - started).toBeLessThan(200)
    expect(message).toBe(
      "/out/big.xlsx: 600,010 cells is more than env:spreadsheet writes to one .xlsx file (500,000); " +
        "write fewer rows per file (split them across files), or write .csv, which holds up to 1,000,000 cells"
    )
    const objects = Array.from({ length: 110_000 }, (_, i) => ({ a: i, b: i, c: i, d: i, e: i, f: i, g: i, h: i, i, j: i }))
    expect(await refusal(call("writeRows", "/out/big.csv", objects))).toBe(
      "/out/big.csv: 1,100,010 cells is more than env:spreadsheet writes to one CSV file (1,000,000); write fewer rows per file (split them across files)"
    )
    expect(fs.vfs.exists("/out/big.xlsx") || fs.vfs.exists("/out/big.csv")).toBe(false)
    // Under the cap, the same rows are written.
    expect(await call("writeSheets", "/out/fits.xlsx", [{ name: "Fits", rows: many.slice(0, 1000) }])).toEqual({ path: "/out/fits.xlsx", sheets: [{ name: "Fits", rows: 1000 }] })
  })

  it("refuses to read a ZIP bomb, or a ZIP named .csv, without parsing it", async () => {
    const bomb = workbookOf([{ name: "Bomb", xml: sheetXml(bombRows(400_000)) }])
    expect(Either.isLeft(checkInflatedSize(bomb))).toBe(true)
    const { call } = open([["/inbox/bomb.xlsx", bomb], ["/inbox/bomb.csv", bomb], ["/inbox/small.xlsx", workbookOf([{ name: "S", xml: sheetXml(numberedRows(2)) }])]])
    const started = Date.now()
    const message = await refusal(call("readSheets", "/inbox/bomb.xlsx"))
    expect(Date.now() - started).toBeLessThan(500)
    expect(message).toMatch(/^\/inbox\/bomb\.xlsx is too large to read safely: it would inflate to 16\.\d MB, \d+ times its size .*; ask for it as \.csv, or split it into smaller workbooks$/)
    expect(await refusal(call("readRows", "/inbox/bomb.csv"))).toBe("/inbox/bomb.csv holds a ZIP file (an .xlsx workbook?), not CSV text: copy it to a path ending in .xlsx and read that")
    expect(await call("readSheets", "/inbox/small.xlsx")).toEqual([{ name: "S", rows: [[1, 1], [2, 2]] }])
  })

  it("reads each row to its last filled cell, whatever range the file declares, so a ragged CSV or a wide <dimension> builds no padding", async () => {
    // SheetJS gives the first file a range of 100,001 columns by 50,001 rows, and the second the
    // whole grid its <dimension> declares; padded to them, either read ran the host out of memory.
    const ragged = ",".repeat(100_000) + "\n" + "x\n".repeat(50_000)
    const declared = workbookOf([{ name: "S", xml: sheetXml(numberedRows(2), "A1:XFD1048576") }])
    const { call } = open([["/inbox/ragged.csv", text(ragged)], ["/inbox/declared.xlsx", declared], ["/inbox/short.csv", text("a,b,c\n1\n,,\n2,,3\n\n")]])
    expect(await call("readSheets", "/inbox/ragged.csv")).toEqual([{ name: "Sheet1", rows: [[], ...Array.from({ length: 50_000 }, () => ["x"])] }])
    expect(await call("readSheets", "/inbox/declared.xlsx")).toEqual([{ name: "S", rows: [[1, 1], [2, 2]] }])
    expect(await call("readSheets", "/inbox/short.csv")).toEqual([{ name: "Sheet1", rows: [["a", "b", "c"], [1], [], [2, null, 3]] }])
    expect(await call("readRows", "/inbox/short.csv")).toEqual([{ a: 1, b: null, c: null }, { a: null, b: null, c: null }, { a: 2, b: null, c: 3 }])
  })

  it("refuses to read more cells than it would write to the file, counted from the cells the file holds", async () => {
    // One cell at the grid's far corner: a 1 KB workbook whose rows reach 1,048,576 and 16,384 columns
    // (1,064,959 cells, a blank row counted as one), and a small sheet of 4.
    const corner = workbookOf([
      { name: "Corner", xml: sheetXml(`<row r="1"><c r="A1" t="n"><v>1</v></c></row><row r="1048576"><c r="XFD1048576" t="n"><v>2</v></c></row>`) },
      { name: "Small", xml: sheetXml(numberedRows(2)) }
    ])
    const wide = "a" + ",".repeat(1_000_000) + "b\n"
    const { call } = open([["/inbox/corner.xlsx", corner], ["/inbox/wide.csv", text(wide)]])
    expect(await refusal(call("readSheets", "/inbox/corner.xlsx"))).toBe(
      "/inbox/corner.xlsx: 1,064,963 cells (each row to its last filled cell) is more than env:spreadsheet reads from one .xlsx file (500,000); " +
        "ask for it split into smaller files, or read one sheet at a time ({ sheet: \"Name\" })"
    )
    expect(await call("readSheets", "/inbox/corner.xlsx", { sheet: "Small" })).toEqual([{ name: "Small", rows: [[1, 1], [2, 2]] }])
    expect(await refusal(call("readRows", "/inbox/wide.csv"))).toBe(
      "/inbox/wide.csv: 1,000,001 cells (each row to its last filled cell) is more than env:spreadsheet reads from one CSV file (1,000,000); ask for it split into smaller files"
    )
  })

  it("writes through the gateway: read-only zones and the file limit refuse with the gateway's message", async () => {
    const { call, fs } = open([], { maxFileBytes: 4000, maxTotalBytes: 50_000 })
    const zone = await refusal(call("writeRows", "/inbox/sales.xlsx", [{ a: 1 }]))
    expect(zone).toContain("/inbox/sales.xlsx is in /inbox, which is read-only")
    expect(await refusal(call("writeSheets", "/std/x.csv", [{ name: "A", rows: [[1]] }]))).toContain("/std")
    const limit = await refusal(call("writeSheets", "/out/wide.csv", [{ name: "A", rows: rowsOfCells(1000, 5) }]))
    expect(limit).toContain("over this environment's limit of 4 KB per file (maxFileBytes)")
    expect(fs.vfs.exists("/inbox/sales.xlsx") || fs.vfs.exists("/out/wide.csv")).toBe(false)
    expect(fs.changed()).toBe(false)
  })
})
