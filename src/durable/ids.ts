/**
 * Identifiers: time-ordered and unique, so ids sort by creation and never collide across processes.
 */
import { randomBytes } from "node:crypto"

/** A new id such as `run_0m3k9x2a7f3c1d2e4b5a6c7d`. */
export const newId = (prefix: string): string =>
  `${prefix}_${Date.now().toString(36).padStart(9, "0")}${randomBytes(8).toString("hex")}`

/** A new W3C trace id (32 hex digits). */
export const newTraceId = (): string => randomBytes(16).toString("hex")

/** A new W3C span id (16 hex digits). */
export const newSpanId = (): string => randomBytes(8).toString("hex")
