import { describe, expect, it } from "@effect/vitest"
import * as XLSX from "@e965/xlsx"
import { Effect } from "effect"
import { describeFile } from "../../../src/environments/vfs/describe.js"
import { mediaTypeOf } from "../../../src/environments/vfs/mediaType.js"
import { bombRows, numberedRows, sheetXml, workbookOf } from "./zipFixtures.js"

const text = (value: string) => new TextEncoder().encode(value)

const png = (width: number, height: number): Uint8Array => {
  const bytes = new Uint8Array(33)
  bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52])
  const view = new DataView(bytes.buffer)
  view.setUint32(16, width)
  view.setUint32(20, height)
  return bytes
}

describe("describeFile", () => {
  it.effect("describes a CSV by rows, columns, header names and guessed types, without its values", () =>
    Effect.gen(function*() {
      const rows = ["id,region,amount,date,paid,note"]
      for (let i = 1; i <= 250; i++) rows.push(`${i},north,${i * 1.5},2024-01-${String((i % 28) + 1).padStart(2, "0")},${i % 2 === 0 ? "true" : "false"},"says ""hi"", twice"`)
      const summary = yield* describeFile("/inbox/sales.csv", text(rows.join("\n") + "\n"))
      expect(summary).toContain("CSV")
      expect(summary).toContain("250 rows × 6 columns")
      expect(summary).toContain("id (integer), region (text), amount (number), date (date), paid (boolean), note (text)")
      expect(summary).not.toContain("north")
      expect(summary.length).toBeLessThan(400)
    }))

  it.effect("reads a TSV by its tab delimiter and notes ragged rows", () =>
    Effect.gen(function*() {
      const summary = yield* describeFile("/inbox/t.tsv", text("a\tb\n1\t2\n3\n"))
      expect(summary).toContain("TSV")
      expect(summary).toContain("2 rows × 2 columns")
      expect(summary).toContain("Rows have 1 to 2 fields")
    }))

  it.effect("describes a real XLSX workbook: sheets, dimensions, header row", () =>
    Effect.gen(function*() {
      const workbook = XLSX.utils.book_new()
      const data = [["Region", "Month", "Revenue"], ...Array.from({ length: 120 }, (_, i) => ["north", `m${i}`, i * 10])]
      XLSX.utils.book_append_sheet(workbook, XLSX.utils.aoa_to_sheet(data), "Sales")
      XLSX.utils.book_append_sheet(workbook, XLSX.utils.aoa_to_sheet([["Note"], ["checked"]]), "Notes")
      const bytes = new Uint8Array(XLSX.write(workbook, { type: "array", bookType: "xlsx" }))
      const summary = yield* describeFile("/inbox/report.xlsx", bytes)
      expect(summary).toContain("2 sheets")
      expect(summary).toContain(`"Sales" 121 rows × 3 columns (A1:C121), first row: Region, Month, Revenue`)
      expect(summary).toContain(`"Notes" 2 rows × 1 column`)
      expect(summary).not.toContain("north")
    }))

  it.effect("counts a sheet's rows right when its XML has no <dimension> (SheetJS alone reports the rows it read)", () =>
    Effect.gen(function*() {
      const numbered = yield* describeFile("/inbox/big.xlsx", workbookOf([{ name: "Big", xml: sheetXml(numberedRows(5000)) }, { name: "Small", xml: sheetXml(numberedRows(300, 3)) }]))
      expect(numbered).toContain(`"Big" 5,000 rows × 2 columns (A1:B5000), first row: 1, 1`)
      expect(numbered).toContain(`"Small" 300 rows × 3 columns (A1:C300)`)
      // Rows without numbers are counted; a <rowBreaks> element is no row.
      const unnumbered = sheetXml(bombRows(3000)).replace("</sheetData>", "</sheetData><rowBreaks count=\"1\"><brk id=\"5\"/></rowBreaks>")
      expect(yield* describeFile("/inbox/plain.xlsx", workbookOf([{ name: "Plain", xml: unnumbered }]))).toContain(`"Plain" 3,000 rows × 2 columns (A1:B3000)`)
      // A declared dimension is still what counts, and a two-row sheet stays two rows.
      expect(yield* describeFile("/inbox/dim.xlsx", workbookOf([{ name: "D", xml: sheetXml(numberedRows(40), "A1:B40") }]))).toContain(`"D" 40 rows × 2 columns (A1:B40)`)
      expect(yield* describeFile("/inbox/two.xlsx", workbookOf([{ name: "T", xml: sheetXml(numberedRows(2)) }]))).toContain(`"T" 2 rows × 2 columns (A1:B2)`)
    }))

  it.effect("describes JSON by its top-level shape, and says when it is invalid", () =>
    Effect.gen(function*() {
      expect(yield* describeFile("/a.json", text(JSON.stringify([{ id: 1, name: "a" }, { id: 2, name: "b" }]))))
        .toContain("an array of 2 items (object); the first has keys id, name")
      expect(yield* describeFile("/b.json", text(JSON.stringify({ rows: [1, 2, 3], meta: { v: 1 }, title: "t" }))))
        .toContain("an object with 3 keys: rows (array of 3), meta (object), title (string)")
      expect(yield* describeFile("/c.json", text("{ broken"))).toContain("not valid JSON")
    }))

  it.effect("describes markdown by lines, words and headings (not inside code fences)", () =>
    Effect.gen(function*() {
      const summary = yield* describeFile("/notes.md", text("# Title\n\nSome words here.\n\n## Part one\n```\n# not a heading\n```\n"))
      expect(summary).toContain("Markdown")
      expect(summary).toContain("headings: # Title, ## Part one.")
      expect(summary).not.toContain("not a heading")
    }))

  it.effect("describes a script by default export and imports", () =>
    Effect.gen(function*() {
      const summary = yield* describeFile("/scripts/sum.js", text(`import { readText } from "env:fs"\nimport * as X from "env:xlsx"\nexport const helper = 1\nexport default async function (args) {\n  return 1\n}\n`))
      expect(summary).toContain("default export: yes")
      expect(summary).toContain("imports: env:fs, env:xlsx")
      expect(summary).toContain("other exports: helper")
      expect(yield* describeFile("/scripts/none.js", text("const a = 1\n"))).toContain("default export: none")
    }))

  it.effect("describes a script of a million blank lines at once, and finds an import written over several lines", () =>
    Effect.gen(function*() {
      // Matched from every line start with a \s* that spans newlines, this took minutes; the second file
      // holds long runs of blanks within lines, which a pattern must not try more than once either.
      const blank = `${"\n".repeat(1_000_000)}import { readText,\n  writeText } from "env:fs"\nexport default () => 1\n`
      expect(yield* describeFile("/scripts/blank.js", text(blank)))
        .toBe("JavaScript module, 1 MB: 1,000,003 lines; default export: yes; imports: env:fs.")
      const spaced = `test(${" ".repeat(200_000)}\nimport ${" ".repeat(200_000)}x\nexport ${" ".repeat(200_000)}\n  test("adds", () => {})\n`
      expect(yield* describeFile("/scripts/spaced.test.js", text(spaced)))
        .toBe("JavaScript module, 600 KB: 4 lines, 2 tests; default export: none; imports: none.")
    }), { timeout: 20_000 })

  it.effect("reads image dimensions from the header bytes (PNG, GIF, JPEG), whatever the name", () =>
    Effect.gen(function*() {
      expect(yield* describeFile("/out/chart.png", png(640, 480))).toContain("PNG image, 33 B, 640 × 480 pixels")
      expect(yield* describeFile("/out/misnamed.txt", png(3, 2))).toContain("3 × 2 pixels")
      const gif = new Uint8Array([0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x20, 0x01, 0x10, 0x00, 0, 0])
      expect(yield* describeFile("/a.gif", gif)).toContain("288 × 16 pixels")
      const jpeg = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, 0xff, 0xc0, 0x00, 0x0b, 0x08, 0x00, 0x64, 0x00, 0xc8, 0x01, 0x01, 0x11, 0x00])
      expect(yield* describeFile("/a.jpg", jpeg)).toContain("200 × 100 pixels")
    }))

  it.effect("describes other binary by size and media type, and plain text by lines and words", () =>
    Effect.gen(function*() {
      expect(yield* describeFile("/blob.bin", new Uint8Array([1, 0, 2, 3]))).toBe("Binary file, 4 B (application/octet-stream)")
      expect(yield* describeFile("/log.txt", text("one two\nthree\n"))).toContain("2 lines, 3 words")
      expect(yield* describeFile("/empty.csv", new Uint8Array())).toContain("Empty")
    }))
})

describe("mediaTypeOf", () => {
  it("prefers the bytes' signature, then the extension, then text or binary", () => {
    expect(mediaTypeOf("/x.txt", png(1, 1))).toBe("image/png")
    expect(mediaTypeOf("/x.CSV")).toBe("text/csv")
    expect(mediaTypeOf("/x.xlsx")).toBe("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
    expect(mediaTypeOf("/noext", text("hello"))).toBe("text/plain")
    expect(mediaTypeOf("/noext", new Uint8Array([0, 1]))).toBe("application/octet-stream")
  })
})
