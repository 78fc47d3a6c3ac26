/**
 * Event retention on both stores: the newest `keepLatest` events are kept however their numbers
 * lie (a rolled-back insert leaves a gap in them), and a prune of more rows than one batch removes
 * them all, saying how many.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type Backend, backends, freshStorage, type Storage } from "../journal/backends.js"

/** `count` events of times 1 to `count`, inserted at once. */
const insertEvents = (storage: Storage, count: number) =>
  storage.database.sql`INSERT INTO foundry_events (id, time, type, trace_id, span_id, parent_span_id, run_id, conversation_id, instance_id, agent, release, data)
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count})
    SELECT 'e' || i, i, 'run.started', 't', 's' || i, NULL, 'run_1', 'conv_1', 'inst_1', 'agent', 'r1', '{}' FROM n`

const seqs = (storage: Storage) =>
  Effect.map(storage.database.sql<{ readonly seq: number }>`SELECT seq FROM foundry_events ORDER BY seq`, (rows) => rows.map((row) => Number(row.seq)))

const pruningTests = (backend: Backend) => {
  it.scopedLive("keeps the newest events it is told to keep, also with gaps among their numbers", () =>
    Effect.gen(function*() {
      const storage = yield* freshStorage(backend)
      yield* insertEvents(storage, 20)
      // Numbers a rolled-back insert took are never stored: a gap among the newest.
      yield* storage.database.sql`DELETE FROM foundry_events WHERE seq BETWEEN 15 AND 18`
      expect(yield* storage.events.prune({ keepLatest: 5 })).toBe(11)
      expect(yield* seqs(storage)).toEqual([12, 13, 14, 19, 20])
      expect(yield* storage.events.prune({ olderThan: 14 })).toBe(2)
      expect(yield* seqs(storage)).toEqual([14, 19, 20])
    }))

  it.scopedLive("removes more events than one batch holds, all of them, and says how many", () =>
    Effect.gen(function*() {
      const storage = yield* freshStorage(backend)
      yield* insertEvents(storage, 12_345)
      expect(yield* storage.events.prune({ olderThan: 12_000 })).toBe(11_999)
      expect((yield* seqs(storage)).length).toBe(346)
      expect(yield* storage.events.prune({ keepLatest: 100 })).toBe(246)
      expect(yield* seqs(storage)).toEqual(Array.from({ length: 100 }, (_, i) => 12_246 + i))
    }), 60_000)
}

for (const backend of backends) {
  describe.skipIf(backend.skip)(`event retention on ${backend.name}`, () => pruningTests(backend))
}
