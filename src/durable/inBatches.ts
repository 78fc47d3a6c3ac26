/**
 * Rows removed a batch at a time, the thread given back between batches: a prune after a long
 * while (or a tightened retention) may remove millions of rows, and on SQLite, which runs on the
 * process's one thread, one statement would hold every request, stream and lease renewal until it
 * ended.
 */
import { Effect } from "effect"

/** The most rows one statement of a prune removes. */
export const pruneBatch = 5_000

/**
 * Runs `batch` (a statement that removes at most `pruneBatch` rows and returns one row for each)
 * until it removes fewer; how many it removed in all.
 */
export const removedInBatches = <E, R>(batch: Effect.Effect<ReadonlyArray<unknown>, E, R>): Effect.Effect<number, E, R> =>
  Effect.gen(function*() {
    let removed = 0
    for (;;) {
      const rows = yield* batch
      removed += rows.length
      if (rows.length < pruneBatch) return removed
      yield* Effect.yieldNow()
    }
  })
