/**
 * One read transaction shared by the reads of a turn of the event loop. In WAL mode, a read
 * outside a transaction begins and ends one of its own, taking and dropping the locks of the
 * database file and its shared memory: system calls that cost more than the lookup itself (about
 * 8 µs a read alone, 20-30 µs under load, against 1.5 µs inside a transaction;
 * docs/performance.md). A run's start reads its status, its instance's context and its transcript,
 * and a busy process makes many such reads in one turn: they share one transaction, ended at the
 * end of the turn, or before anything else uses the connection (a batch, a client's statement or
 * transaction), so that a write never runs inside it.
 *
 * Reads inside it see the database as of its first read: this process's own writes all come
 * after it ends, and another process's commit made during the turn is seen on the next one, as
 * it would be by a read a moment earlier.
 */
import type Sqlite from "better-sqlite3"

/** The connection's shared read transaction. */
export interface ReadSnapshot {
  /** Whether it is open: the connection is in a transaction that is only this one. */
  readonly isOpen: () => boolean
  /** Runs `read` inside it, opened for the rest of this turn when closed; a failed read closes it. */
  readonly within: <A>(read: () => A) => A
  /** Ends it, if open: before the connection is used for anything but a read. */
  readonly end: () => void
}

/** The shared read transaction of `db`; the time spent beginning and ending it goes to `spent`. */
export const makeReadSnapshot = (db: Sqlite.Database, spent: (millis: number) => void): ReadSnapshot => {
  const begin = db.prepare("BEGIN DEFERRED")
  const commit = db.prepare("COMMIT")
  let open = false

  const end = (): void => {
    if (!open) return
    open = false
    if (!db.open || !db.inTransaction) return
    const started = performance.now()
    commit.run()
    spent(performance.now() - started)
  }

  return {
    isOpen: () => open,
    within: (read) => {
      if (!open && !db.inTransaction) {
        const started = performance.now()
        begin.run()
        spent(performance.now() - started)
        open = true
        setImmediate(end)
      }
      try {
        return read()
      } catch (cause) {
        // Closed, so that a read refused by a lock can be tried again outside it.
        end()
        throw cause
      }
    },
    end
  }
}
