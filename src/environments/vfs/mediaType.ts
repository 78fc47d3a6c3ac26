/**
 * A file's media type, from its name and, when given, its first bytes: enough to pick how to
 * describe a file, which preview to offer and the `Content-Type` of a download.
 */

const byExtension: Readonly<Record<string, string>> = {
  csv: "text/csv",
  tsv: "text/tab-separated-values",
  txt: "text/plain",
  log: "text/plain",
  md: "text/markdown",
  markdown: "text/markdown",
  json: "application/json",
  jsonl: "application/x-ndjson",
  ndjson: "application/x-ndjson",
  js: "text/javascript",
  mjs: "text/javascript",
  ts: "text/typescript",
  html: "text/html",
  htm: "text/html",
  css: "text/css",
  xml: "application/xml",
  yaml: "application/yaml",
  yml: "application/yaml",
  svg: "image/svg+xml",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  pdf: "application/pdf",
  zip: "application/zip",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  xls: "application/vnd.ms-excel",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  pptx: "application/vnd.openxmlformats-officedocument.presentationml.presentation"
}

const startsWith = (bytes: Uint8Array, signature: ReadonlyArray<number>): boolean =>
  bytes.byteLength >= signature.length && signature.every((byte, index) => bytes[index] === byte)

/** The media type the first bytes announce, for the formats whose signature is unambiguous. */
export const signatureMediaType = (bytes: Uint8Array): string | undefined => {
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "image/png"
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return "image/jpeg"
  if (startsWith(bytes, [0x47, 0x49, 0x46, 0x38])) return "image/gif"
  if (startsWith(bytes, [0x25, 0x50, 0x44, 0x46, 0x2d])) return "application/pdf"
  if (startsWith(bytes, [0x52, 0x49, 0x46, 0x46]) && bytes.byteLength >= 12 && String.fromCharCode(...bytes.subarray(8, 12)) === "WEBP") return "image/webp"
  return undefined
}

/** The extension of `path`, lower case, without the dot ("" when it has none). */
export const extensionOf = (path: string): string => {
  const name = path.slice(path.lastIndexOf("/") + 1)
  const dot = name.lastIndexOf(".")
  return dot <= 0 ? "" : name.slice(dot + 1).toLowerCase()
}

/**
 * Whether `bytes` look binary: a NUL in the first 8 KB, or bytes that are not UTF-8 there. Text
 * files never hold NUL, and binary formats (images, zip containers) almost always do early on.
 */
export const isBinary = (bytes: Uint8Array): boolean => {
  const head = bytes.subarray(0, 8192)
  if (head.includes(0)) return true
  try {
    // A multi-byte character cut at the 8 KB edge is not a reason to call the file binary.
    new TextDecoder("utf-8", { fatal: true }).decode(head, { stream: head.byteLength < bytes.byteLength })
    return false
  } catch {
    return true
  }
}

/**
 * The media type of `path`: the signature of `bytes` wins for images and PDF (a PNG named
 * `.txt` is still a PNG); otherwise the extension; otherwise `text/plain` for text bytes and
 * `application/octet-stream` for the rest.
 */
export const mediaTypeOf = (path: string, bytes?: Uint8Array): string => {
  const sniffed = bytes === undefined ? undefined : signatureMediaType(bytes)
  if (sniffed !== undefined) return sniffed
  const known = byExtension[extensionOf(path)]
  if (known !== undefined) return known
  if (bytes === undefined) return "application/octet-stream"
  return isBinary(bytes) ? "application/octet-stream" : "text/plain"
}

/** Whether a media type is text a person can read as it is. */
export const isTextMediaType = (mediaType: string): boolean =>
  mediaType.startsWith("text/") || mediaType === "application/json" || mediaType === "application/x-ndjson" ||
  mediaType === "application/xml" || mediaType === "application/yaml" || mediaType === "image/svg+xml"

/** Whether a media type is a spreadsheet workbook (what SheetJS reads). */
export const isWorkbookMediaType = (mediaType: string): boolean => mediaType === byExtension.xlsx || mediaType === byExtension.xls
