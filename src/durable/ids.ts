/**
 * Identifiers: time-ordered and unique, so ids sort by creation and never collide across processes.
 */
import { randomBytes } from "node:crypto"

// One random draw per process and a counter within it: unique across processes without asking
// the system's random source for every id (ids are made on the hot path of every run).
const processPart = randomBytes(5).toString("hex")
let counter = 0

/** A new id such as `run_0mx2s6d2x3a1b2c3d4e0001f`: time, process, sequence. */
export const newId = (prefix: string): string => {
  counter = (counter + 1) % 0x100000
  return `${prefix}_${Date.now().toString(36).padStart(9, "0")}${processPart}${counter.toString(16).padStart(5, "0")}`
}
