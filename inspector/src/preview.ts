/**
 * How the inspector shows a file it can preview: an image from its download URL, the start of a
 * text, or the first rows of each sheet of a table (the server reads CSV and XLSX); and sizes in
 * words a person reads at a glance.
 */
import type { ArtifactPreview } from "./api.js"
import { h } from "./dom.js"

/** A byte count, short: `812 B`, `4.2 KB`, `3.1 MB`. */
export const fileSize = (bytes: number): string =>
  bytes < 1024 ? `${bytes} B` : bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`

type Sheet = Extract<ArtifactPreview, { readonly kind: "table" }>["sheets"][number]

// The first row is taken as the header: what an export's first row almost always is.
const sheetTable = (sheet: Sheet, named: boolean) =>
  h("div", { class: "sheet", "data-sheet": sheet.name },
    named ? h("b", {}, sheet.name) : null,
    h("div", { class: "sheet-scroll" },
      h("table", { class: "table preview-table", "data-testid": "preview-table" },
        sheet.rows.length === 0 ? null : h("thead", {}, h("tr", {}, (sheet.rows[0] ?? []).map((cell) => h("th", {}, cell)))),
        h("tbody", {}, sheet.rows.slice(1).map((row) => h("tr", {}, row.map((cell) => h("td", {}, cell))))))),
    sheet.truncated ? h("p", { class: "muted" }, "Only the first rows and columns are shown; download the file for the rest.") : null)

/** The preview of a file downloaded from `url`. */
export const previewElement = (preview: ArtifactPreview, url: string, alt: string): HTMLElement => {
  switch (preview.kind) {
    case "image":
      return h("img", { class: "preview-image", src: url, alt, "data-testid": "preview-image" })
    case "text":
      return h("div", {}, h("pre", { "data-testid": "preview-text" }, preview.text),
        preview.truncated ? h("p", { class: "muted" }, "Only the start is shown; download the file for the rest.") : null)
    case "table":
      return h("div", { class: "sheets" }, preview.sheets.map((sheet) => sheetTable(sheet, preview.sheets.length > 1)))
    case "none":
      return h("p", { class: "muted" }, "No preview for this kind of file.")
  }
}
