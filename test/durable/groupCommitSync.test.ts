/**
 * The synchronous group commit while another process holds the database's write lock: units wait
 * for it without holding the thread, each for `lockWait` from when it first met the lock, and are
 * written together once the lock is free.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Exit, Fiber } from "effect"
import { groupCommitSync, type SyncBatch, type WriteUnit } from "../../src/durable/Database.js"

const unit = (name: string): WriteUnit => ({ statements: [{ sql: name, params: [] }] })

/** A writer locked out until `free()`; the batches it wrote, by their units' statements. */
const lockedWriter = () => {
  let locked = true
  const batches: Array<ReadonlyArray<string>> = []
  const writeNow = (units: ReadonlyArray<WriteUnit>): SyncBatch => {
    if (locked) return { _tag: "Locked" }
    batches.push(units.map((u) => u.statements[0]?.sql ?? ""))
    return { _tag: "Done", written: Either.right(units.map(() => ({ _tag: "Written" as const, rows: [] }))) }
  }
  return { writeNow, batches, free: () => (locked = false) }
}

describe("group commit while another process holds the write lock", () => {
  it.live("waits without holding the thread, and writes the waiting units together once the lock is free", () =>
    Effect.gen(function*() {
      const writer = lockedWriter()
      const write = groupCommitSync(writer.writeNow, () => {}, 5_000)
      const first = yield* Effect.fork(write(unit("a")))
      yield* Effect.sleep("30 millis")
      const second = yield* Effect.fork(write(unit("b")))
      // The thread is free meanwhile: this fiber's timers run.
      yield* Effect.sleep("30 millis")
      expect(writer.batches).toEqual([])
      writer.free()
      yield* Fiber.join(first)
      yield* Fiber.join(second)
      expect(writer.batches).toEqual([["a", "b"]])
    }))

  it.live("fails a unit that has waited `lockWait`, while one that came later waits on and is written", () =>
    Effect.gen(function*() {
      const writer = lockedWriter()
      const write = groupCommitSync(writer.writeNow, () => {}, 150)
      const early = yield* Effect.fork(write(unit("early")))
      yield* Effect.sleep("100 millis")
      const late = yield* Effect.fork(write(unit("late")))
      const failed = yield* Fiber.await(early)
      expect(Exit.isFailure(failed)).toBe(true)
      expect(String(Exit.isFailure(failed) ? failed.cause : "")).toContain("database is locked")
      writer.free()
      yield* Fiber.join(late)
      expect(writer.batches).toEqual([["late"]])
    }))
})
