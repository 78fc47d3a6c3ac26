/**
 * Hand-made ZIPs and workbooks for tests: a workbook SheetJS would not write (no <dimension>, rows
 * without numbers), ZIP bombs, and headers that lie about sizes.
 */
import { deflateRawSync } from "node:zlib"

/**
 * One entry; `declaredSize` replaces the true inflated size in both headers (a lie), and
 * `deflated` replaces the compressed stream (`data` still gives the CRC).
 */
export interface ZipEntryFixture {
  readonly name: string
  readonly data: Uint8Array | string
  readonly declaredSize?: number
  readonly deflated?: Uint8Array
  /** Extra-field blocks of the local and the central header. */
  readonly localExtra?: Uint8Array
  readonly centralExtra?: Uint8Array
}

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})
const crc32 = (bytes: Uint8Array): number => {
  let crc = 0xffffffff
  for (const byte of bytes) crc = (crcTable[(crc ^ byte) & 0xff] ?? 0) ^ (crc >>> 8)
  return (crc ^ 0xffffffff) >>> 0
}

const bytesOf = (data: Uint8Array | string): Uint8Array => typeof data === "string" ? new TextEncoder().encode(data) : data

/**
 * A deflated ZIP of `entries`; with `centralCopies` each central record is written that many times
 * (entries sharing one local header and its data).
 */
export const zipOf = (entries: ReadonlyArray<ZipEntryFixture>, options: { readonly centralCopies?: number } = {}): Uint8Array => {
  const locals: Array<Buffer> = []
  const centrals: Array<Buffer> = []
  let offset = 0
  for (const entry of entries) {
    const data = bytesOf(entry.data)
    const compressed = entry.deflated === undefined ? deflateRawSync(data) : Buffer.from(entry.deflated)
    const name = Buffer.from(entry.name, "latin1")
    const size = entry.declaredSize ?? data.byteLength
    const localExtra = Buffer.from(entry.localExtra ?? new Uint8Array())
    const centralExtra = Buffer.from(entry.centralExtra ?? new Uint8Array())
    const local = Buffer.alloc(30 + name.length + localExtra.length)
    local.writeUInt32LE(0x04034b50, 0)
    local.writeUInt16LE(20, 4)
    local.writeUInt16LE(8, 8)
    local.writeUInt32LE(crc32(data), 14)
    local.writeUInt32LE(compressed.length, 18)
    local.writeUInt32LE(size, 22)
    local.writeUInt16LE(name.length, 26)
    local.writeUInt16LE(localExtra.length, 28)
    name.copy(local, 30)
    localExtra.copy(local, 30 + name.length)
    const central = Buffer.alloc(46 + name.length + centralExtra.length)
    central.writeUInt32LE(0x02014b50, 0)
    central.writeUInt16LE(20, 4)
    central.writeUInt16LE(20, 6)
    central.writeUInt16LE(8, 10)
    central.writeUInt32LE(crc32(data), 16)
    central.writeUInt32LE(compressed.length, 20)
    central.writeUInt32LE(size, 24)
    central.writeUInt16LE(name.length, 28)
    central.writeUInt16LE(centralExtra.length, 30)
    central.writeUInt32LE(offset, 42)
    name.copy(central, 46)
    centralExtra.copy(central, 46 + name.length)
    locals.push(local, compressed)
    for (let copy = 0; copy < (options.centralCopies ?? 1); copy++) centrals.push(central)
    offset += local.length + compressed.length
  }
  const directory = Buffer.concat(centrals)
  const end = Buffer.alloc(22)
  end.writeUInt32LE(0x06054b50, 0)
  end.writeUInt16LE(centrals.length, 8)
  end.writeUInt16LE(centrals.length, 10)
  end.writeUInt32LE(directory.length, 12)
  end.writeUInt32LE(offset, 16)
  return new Uint8Array(Buffer.concat([...locals, directory, end]))
}

const main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
const relationships = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"

/** A worksheet's XML around `rows` (each a `<row>` element); `dimension` as written, or none. */
export const sheetXml = (rows: string, dimension?: string): string =>
  `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="${main}" xmlns:r="${relationships}">` +
  (dimension === undefined ? "" : `<dimension ref="${dimension}"/>`) +
  `<sheetData>${rows}</sheetData></worksheet>`

/** A minimal .xlsx: one worksheet per entry of `sheets` (its name and its XML), plus `extra` entries. */
export const workbookOf = (
  sheets: ReadonlyArray<{ readonly name: string; readonly xml: string; readonly declaredSize?: number }>,
  extra: ReadonlyArray<ZipEntryFixture> = []
): Uint8Array =>
  zipOf([
    {
      name: "[Content_Types].xml",
      data: `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
        `<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>` +
        `<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>` +
        sheets.map((_, index) => `<Override PartName="/xl/worksheets/sheet${index + 1}.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>`).join("") +
        `</Types>`
    },
    {
      name: "_rels/.rels",
      data: `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
        `<Relationship Id="rId1" Type="${relationships}/officeDocument" Target="xl/workbook.xml"/></Relationships>`
    },
    {
      name: "xl/workbook.xml",
      data: `<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="${main}" xmlns:r="${relationships}"><sheets>` +
        sheets.map((sheet, index) => `<sheet name="${sheet.name}" sheetId="${index + 1}" r:id="rId${index + 1}"/>`).join("") +
        `</sheets></workbook>`
    },
    {
      name: "xl/_rels/workbook.xml.rels",
      data: `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
        sheets.map((_, index) => `<Relationship Id="rId${index + 1}" Type="${relationships}/worksheet" Target="worksheets/sheet${index + 1}.xml"/>`).join("") +
        `</Relationships>`
    },
    ...sheets.map((sheet, index): ZipEntryFixture => ({
      name: `xl/worksheets/sheet${index + 1}.xml`,
      data: sheet.xml,
      ...(sheet.declaredSize === undefined ? {} : { declaredSize: sheet.declaredSize })
    })),
    ...extra
  ])

/** Rows `<row r="n"><c r="An" t="n"><v>n</v></c>…</row>` for n in 1..count, `columns` cells each. */
export const numberedRows = (count: number, columns = 2): string => {
  const parts: Array<string> = []
  for (let row = 1; row <= count; row++) {
    let cells = ""
    for (let column = 0; column < columns; column++) cells += `<c r="${String.fromCharCode(65 + column)}${row}" t="n"><v>${row}</v></c>`
    parts.push(`<row r="${row}">${cells}</row>`)
  }
  return parts.join("")
}

/** `count` identical rows without numbers: the XML of a ZIP bomb (it compresses about 1000 times). */
export const bombRows = (count: number): string => "<row><c><v>1</v></c><c><v>2</v></c></row>".repeat(count)

/** A deflate stream of `blocks` empty stored blocks: much to read, nothing inflated. */
export const emptyBlocks = (blocks: number): Uint8Array => {
  const bytes = new Uint8Array(blocks * 5 + 2)
  for (let block = 0; block < blocks; block++) bytes.set([0x00, 0x00, 0x00, 0xff, 0xff], block * 5)
  bytes.set([0x03, 0x00], blocks * 5)
  return bytes
}

/** A ZIP64 extended-information record (id 1) giving an entry's inflated and compressed sizes. */
export const zip64Record = (inflated: number, compressed: number): Uint8Array => {
  const record = Buffer.alloc(20)
  record.writeUInt16LE(0x0001, 0)
  record.writeUInt16LE(16, 2)
  record.writeBigUInt64LE(BigInt(inflated), 4)
  record.writeBigUInt64LE(BigInt(compressed), 12)
  return new Uint8Array(record)
}
