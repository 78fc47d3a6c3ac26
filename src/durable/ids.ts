/**
 * Identifiers: time-ordered and unique, so ids sort by creation and never collide across processes.
 */
import { randomBytes } from "node:crypto"

/**
 * A writer's part of the ids it makes: one random draw, and a counter within it, so ids are unique
 * across processes without asking the system's random source for every id (ids are made on the
 * hot path of every run). Each process has one; the event log draws its own, so that an event's
 * id says which log wrote it (`writerOf`).
 */
export const newWriter = (): string => randomBytes(5).toString("hex")

const processPart = newWriter()
let counter = 0

/** A new id such as `run_0mx2s6d2x3a1b2c3d4e0001f`: time, writer (by default the process), sequence. */
export const newId = (prefix: string, writer: string = processPart): string => {
  counter = (counter + 1) % 0x100000
  return `${prefix}_${Date.now().toString(36).padStart(9, "0")}${writer}${counter.toString(16).padStart(5, "0")}`
}

/** The writer part of an id `newId` made (counted from its end: the time's part may grow). */
export const writerOf = (id: string): string => id.slice(-15, -5)
