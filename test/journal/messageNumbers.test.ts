/**
 * A conversation's messages are numbered by the statement that appends them (its last number, plus
 * one). On PostgreSQL two processes can append to one conversation at once: a cancel of one run,
 * without its lease, while the conversation's runner writes a step of another. The events' lock
 * orders two such transactions when both insert events; without it both may read the same last
 * number, and the second to insert found the first's row there (a unique violation) and failed.
 * The test holds the runner's insert back after it has read its number, with a lock of its own,
 * while the cancel from a second process on the store is written.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as PgDatabase from "../../src/durable/PgDatabase.js"
import type { ChatMessage } from "../../src/models/Model.js"
import { connect, freshSchema, holdLocks, skipPostgres, someoneWaitsForALock } from "../support/postgres.js"
import { until } from "../support/until.js"
import { open } from "./backends.js"
import { assistant, draft, newRun, started, submit, user } from "./fixtures.js"

/** The number the test's lock is taken by (the store's own advisory locks take two). */
const heldBack = 71_003

describe.skipIf(skipPostgres)("message numbers on PostgreSQL", () => {
  it.scopedLive("a cancel from another process and the runner's step numbered at once: both written, one after the other", () =>
    Effect.gen(function*() {
      const url = yield* freshSchema
      const runner = yield* open(PgDatabase.layer(url))
      const canceller = yield* open(PgDatabase.layer(url))
      const sql = yield* connect(url)
      const { journal } = runner

      // r1 suspended on its call to `lookup`, its lease let go; r2, next in the conversation, runs.
      const r1 = yield* submit(journal, newRun("r1"))
      const first = yield* journal.claim(r1, "A", 60_000)
      if (first._tag !== "Claimed") return yield* Effect.dieMessage("r1's lease is held")
      yield* journal.record(r1, { messages: [user, assistant], events: [draft("e-r1", r1, started)], status: { status: "running" } }, first.lease)
      yield* journal.record(r1, { status: { status: "suspended" }, releaseLease: true }, first.lease)
      const r2 = yield* submit(journal, newRun("r2"), { newConversation: false })
      const second = yield* journal.claim(r2, "A", 60_000)
      if (second._tag !== "Claimed") return yield* Effect.dieMessage("r2's lease is held")

      // r2's message waits, once its number is read, for a lock the test holds.
      yield* sql.unsafe(`CREATE FUNCTION foundry_test_hold() RETURNS trigger AS $$
        BEGIN PERFORM pg_advisory_xact_lock(${heldBack}); RETURN NEW; END $$ LANGUAGE plpgsql`)
      yield* sql.unsafe(`CREATE TRIGGER foundry_test_hold BEFORE INSERT ON foundry_messages FOR EACH ROW
        WHEN (NEW.run_id = 'r2') EXECUTE FUNCTION foundry_test_hold()`)
      const release = yield* holdLocks(sql, sql.unsafe(`SELECT pg_advisory_xact_lock(${heldBack})`))
      const asked: ChatMessage = { _tag: "user", content: "And order 43?" }
      // r2's first step (its message), storing no event: the events' lock does not order it.
      const step = yield* Effect.fork(journal.record(r2, { messages: [asked], status: { status: "running" } }, second.lease))
      yield* until("the runner's step waits", someoneWaitsForALock(sql, "%INSERT INTO foundry_messages%"))

      // The cancel of r1, from the other process: its answer to the open call, and its end.
      const cancelled: ChatMessage = { _tag: "tool", toolCallId: "call-1", name: "lookup", content: "cancelled" }
      yield* canceller.journal.record(r1, {
        messages: [cancelled],
        events: [draft("e-cancel", r1, { type: "run.cancelled", data: { from: "suspended" } })],
        status: { status: "cancelled" }
      })
      yield* release
      yield* Fiber.join(step)

      const stored = yield* runner.store.listMessages("c1")
      expect(stored.map((message) => [message.seq, message.runId, message.message])).toEqual([
        [1, "r1", user],
        [2, "r1", assistant],
        [3, "r1", cancelled],
        [4, "r2", asked]
      ])
    }), 30_000)
})
