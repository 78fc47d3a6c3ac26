/**
 * How many bytes a ZIP (an .xlsx workbook) inflates to, learnt before a parser inflates it.
 * SheetJS inflates every entry of a workbook in memory on the host's main thread, and a few
 * hundred KB of repetitive XML can inflate to hundreds of MB; so every host-side reader of a
 * workbook (describe, the spreadsheet adapter, the inspector's preview) measures it first and
 * refuses one that would inflate past a bound.
 *
 * The headers are read the way SheetJS reads them (the last end-of-central-directory record, each
 * central header, then each local header, which it trusts), so the sizes measured are the ones it
 * would inflate. Headers can lie, and SheetJS's inflater grows past a declared size; so once the
 * declared total is within the bound, each entry is inflated with zlib capped at its declared
 * size, in native code, and a stream that inflates past it, or that zlib cannot read, is refused.
 */
import { inflateRawSync } from "node:zlib"
import { Data, Either } from "effect"
import { formatBytes } from "./formatBytes.js"

/** What a ZIP's entries inflate to, by their headers. */
export interface ZipInflation {
  readonly fileBytes: number
  /** The sum of the entries' inflated sizes; `Infinity` when a header marks its size as ZIP64 without giving it. */
  readonly inflatedBytes: number
  /** The entries' names, in central-directory order. */
  readonly names: ReadonlyArray<string>
}

/**
 * How far a workbook may inflate: at most `maxInflatedBytes`, and, once past `ratioFloorBytes`,
 * at most `maxRatio` times the file (real workbooks inflate 3 to 15 times; bombs far more).
 */
export interface InflationLimits {
  readonly maxInflatedBytes: number
  readonly maxRatio: number
  readonly ratioFloorBytes: number
}

/** The bound every host-side workbook reader uses. */
export const inflationLimits: InflationLimits = { maxInflatedBytes: 64_000_000, maxRatio: 20, ratioFloorBytes: 4_000_000 }

/** A ZIP that would inflate past the bound; `message` is a clause saying by how much. */
export class ZipTooLarge extends Data.TaggedError("ZipTooLarge")<{
  readonly fileBytes: number
  /** What it inflates to, or at least (`Infinity` for ZIP64 sizes). */
  readonly inflatedBytes: number
  readonly names: ReadonlyArray<string>
  readonly message: string
}> {}

/** Bytes that start like a ZIP but whose headers or data cannot be read. */
export class ZipUnreadable extends Data.TaggedError("ZipUnreadable")<{ readonly message: string }> {}

/** Whether SheetJS would read `bytes` as a ZIP: "PK" and two small bytes, its own test. */
export const isZip = (bytes: Uint8Array): boolean =>
  bytes[0] === 0x50 && bytes[1] === 0x4b && (bytes[2] ?? 9) < 9 && (bytes[3] ?? 9) < 9

const endOfCentralDirectory = Uint8Array.of(0x50, 0x4b, 0x05, 0x06)
const zip64Marker = 0xffffffff
const zip64ExtraField = 0x0001

/** One entry as the parser will inflate it. */
interface Entry {
  readonly name: string
  readonly method: number
  readonly dataStart: number
  /** The larger of the central and local header's sizes (ZIP64 records included); `Infinity` for a 32-bit size marked as ZIP64 without one. */
  readonly declaredBytes: number
}

class Malformed extends Error {}

const reader = (bytes: Uint8Array) => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const need = (at: number, length: number, what: string) => {
    if (at < 0 || at + length > bytes.byteLength) throw new Malformed(`${what} lies outside the file`)
  }
  return {
    u16: (at: number, what: string) => {
      need(at, 2, what)
      return view.getUint16(at, true)
    },
    u32: (at: number, what: string) => {
      need(at, 4, what)
      return view.getUint32(at, true)
    },
    latin1: (at: number, length: number, what: string) => {
      need(at, length, what)
      return Buffer.from(bytes.buffer, bytes.byteOffset + at, length).toString("latin1")
    },
    /**
     * The sizes in an extra-field block's ZIP64 record (SheetJS reads the inflated size, then the
     * compressed one, whichever 32-bit fields were marked); undefined when it has none.
     */
    zip64: (at: number, length: number): { readonly inflated: number; readonly compressed: number | undefined } | undefined => {
      for (let field = at; field + 4 <= at + length && field + 4 <= bytes.byteLength; field += 4 + view.getUint16(field + 2, true)) {
        if (view.getUint16(field, true) !== zip64ExtraField) continue
        const size = view.getUint16(field + 2, true)
        const uint64 = (offset: number) => view.getUint32(offset, true) + view.getUint32(offset + 4, true) * 2 ** 32
        // A record too short for a size, or cut off by the file's end, is trusted to no size at all.
        if (size < 8 || field + 12 > bytes.byteLength) return { inflated: Infinity, compressed: Infinity }
        return { inflated: uint64(field + 4), compressed: size >= 16 && field + 20 <= bytes.byteLength ? uint64(field + 12) : undefined }
      }
      return undefined
    }
  }
}

/** A size as SheetJS takes it: the ZIP64 record's when it gives one, else the 32-bit field (4 GB when marked). */
const sizeOf = (field: number, zip64: number | undefined): number =>
  zip64 !== undefined && zip64 > 0 ? zip64 : field === zip64Marker ? Infinity : field

/** The entries as SheetJS's `parse_zip` walks them. */
const entriesOf = (bytes: Uint8Array): ReadonlyArray<Entry> => {
  const read = reader(bytes)
  const end = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).lastIndexOf(endOfCentralDirectory, bytes.byteLength - 4)
  if (end < 0) throw new Malformed("it has no end-of-central-directory record")
  const count = read.u16(end + 8, "the end-of-central-directory record")
  let at = read.u32(end + 16, "the end-of-central-directory record")
  const entries: Array<Entry> = []
  for (let index = 0; index < count; index++) {
    const what = `central header ${index + 1}`
    const centralSize = read.u32(at + 24, what)
    const nameLength = read.u16(at + 28, what)
    const extraLength = read.u16(at + 30, what)
    const commentLength = read.u16(at + 32, what)
    const offset = read.u32(at + 42, what)
    const name = read.latin1(at + 46, nameLength, what)
    const centralZip64 = read.zip64(at + 46 + nameLength, extraLength)
    at += 46 + nameLength + extraLength + commentLength

    const local = `the local header of ${name}`
    const method = read.u16(offset + 8, local)
    const localCompressed = read.u32(offset + 18, local)
    const localSize = read.u32(offset + 22, local)
    const localNameLength = read.u16(offset + 26, local)
    const localExtraLength = read.u16(offset + 28, local)
    const dataStart = offset + 30 + localNameLength + localExtraLength
    if (dataStart > bytes.byteLength) throw new Malformed(`${local} lies outside the file`)
    const localZip64 = read.zip64(offset + 30 + localNameLength, localExtraLength)
    // Deflated, SheetJS allocates the local size before inflating and checks the central one after.
    // Stored, it copies the local compressed length, which the file bounds.
    const declaredBytes = method === 0
      ? Math.min(sizeOf(localCompressed, localZip64?.compressed), bytes.byteLength - dataStart)
      : Math.max(sizeOf(centralSize, centralZip64?.inflated), sizeOf(localSize, localZip64?.inflated))
    entries.push({ name, method, dataStart, declaredBytes })
  }
  return entries
}

const unreadable = (error: unknown): ZipUnreadable => {
  if (error instanceof Malformed) return new ZipUnreadable({ message: `it is not a readable ZIP file: ${error.message}` })
  throw error
}

const inflationOf = (bytes: Uint8Array, entries: ReadonlyArray<Entry>): ZipInflation => ({
  fileBytes: bytes.byteLength,
  inflatedBytes: entries.reduce((total, entry) => total + entry.declaredBytes, 0),
  names: entries.map((entry) => entry.name)
})

/** What the headers of `bytes` say its entries inflate to, without inflating anything. */
export const zipInflatedSize = (bytes: Uint8Array): Either.Either<ZipInflation, ZipUnreadable> =>
  Either.map(Either.try({ try: () => entriesOf(bytes), catch: unreadable }), (entries) => inflationOf(bytes, entries))

/** Why `inflation` is past `limits`, as a clause; undefined when it is within them. */
const excess = (inflation: ZipInflation, limits: InflationLimits): string | undefined => {
  const { fileBytes, inflatedBytes } = inflation
  if (inflatedBytes === Infinity) return `it declares ZIP64 sizes (4 GB or more) without giving them, far past the ${formatBytes(limits.maxInflatedBytes)} a workbook may inflate to`
  if (inflatedBytes > limits.maxInflatedBytes) {
    return `it would inflate to ${formatBytes(inflatedBytes)}, past the ${formatBytes(limits.maxInflatedBytes)} a workbook may inflate to`
  }
  if (inflatedBytes > limits.ratioFloorBytes && inflatedBytes > fileBytes * limits.maxRatio) {
    return `it would inflate to ${formatBytes(inflatedBytes)}, ${Math.round(inflatedBytes / Math.max(fileBytes, 1))} times its size ` +
      `(a workbook may inflate to ${limits.maxRatio} times its size), which is how ZIP bombs look`
  }
  return undefined
}

/** The compressed bytes zlib consumed, from an `info: true` answer. */
const consumedBy = (answer: unknown): number => {
  if (typeof answer !== "object" || answer === null || !("engine" in answer)) return 0
  const engine: unknown = answer.engine
  return typeof engine === "object" && engine !== null && "bytesWritten" in engine && typeof engine.bytesWritten === "number" ? engine.bytesWritten : 0
}

/**
 * Inflates each deflated entry natively, capped at its declared size, and keeps the compressed
 * bytes read to about the file's size: entries that share their data (another bomb's trick) would
 * have the parser inflate the same bytes thousands of times.
 */
const verifyStreams = (bytes: Uint8Array, entries: ReadonlyArray<Entry>, inflation: ZipInflation): ZipTooLarge | ZipUnreadable | undefined => {
  const maxConsumed = 2 * bytes.byteLength + 65_536
  let consumed = 0
  for (const entry of entries) {
    if (entry.method !== 8) continue
    try {
      // From the data's start to the stream's own end, as SheetJS reads it (zlib ignores what follows).
      consumed += consumedBy(inflateRawSync(bytes.subarray(entry.dataStart), { maxOutputLength: Math.max(entry.declaredBytes, 1), info: true }))
    } catch (error) {
      if (typeof error === "object" && error !== null && "code" in error && error.code === "ERR_BUFFER_TOO_LARGE") {
        return new ZipTooLarge({ ...inflation, message: `${entry.name} inflates past the ${formatBytes(entry.declaredBytes)} its headers declare, which is how ZIP bombs hide` })
      }
      return new ZipUnreadable({ message: `it is not a readable ZIP file: ${entry.name} is damaged (${error instanceof Error ? error.message : String(error)})` })
    }
    if (consumed > maxConsumed) return new ZipUnreadable({ message: "it is not a readable ZIP file: its entries share their compressed data" })
  }
  return undefined
}

/**
 * The inflated size of the ZIP `bytes`, refused when past `limits` (by its headers, before
 * inflating anything) or when an entry inflates past what its headers declare.
 */
export const checkInflatedSize = (bytes: Uint8Array, limits: InflationLimits = inflationLimits): Either.Either<ZipInflation, ZipTooLarge | ZipUnreadable> =>
  Either.gen(function*() {
    const entries = yield* Either.try({ try: () => entriesOf(bytes), catch: unreadable })
    const inflation = inflationOf(bytes, entries)
    const tooFar = excess(inflation, limits)
    if (tooFar !== undefined) return yield* Either.left(new ZipTooLarge({ ...inflation, message: tooFar }))
    const refused = verifyStreams(bytes, entries, inflation)
    if (refused !== undefined) return yield* Either.left(refused)
    return inflation
  })
