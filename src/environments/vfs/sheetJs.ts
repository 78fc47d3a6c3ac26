/**
 * SheetJS (`@e965/xlsx`), imported by the first workbook read or written: about a fifth of what a
 * server would load at start otherwise, for projects that may never see a spreadsheet.
 */
import { Effect } from "effect"

/** The SheetJS module. */
export type SheetJs = typeof import("@e965/xlsx")

/** Imports SheetJS (once: the module loader keeps it). */
export const loadSheetJs = (): Promise<SheetJs> => import("@e965/xlsx")

/** SheetJS, as an effect. */
export const sheetJs: Effect.Effect<SheetJs> = Effect.promise(loadSheetJs)
