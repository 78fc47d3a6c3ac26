/**
 * A group commit's batch on the SQLite connection, written synchronously with prepared statements
 * between one prepared `BEGIN IMMEDIATE` and `COMMIT`: each unit's guards, then its statements. A
 * batch of several units is written in one savepoint; when a unit fails, it is rolled back to it
 * and written again with each unit in a savepoint of its own, so that the failed unit is rolled
 * back alone. Units fail seldom: a savepoint for each unit every time was two statements a unit.
 */
import type { BatchOutcome, Statement, WriteUnit } from "./Database.js"
import type { SqliteConnection } from "./sqliteConnection.js"
import { messageOf } from "./StoreError.js"

/** The batch writer of one connection. */
export interface SqliteBatch {
  /** Begins the batch's transaction; throws as SQLite does (`SQLITE_BUSY` while another process writes). */
  readonly begin: () => void
  /**
   * Writes `units` in the transaction begun and commits it. A unit whose statement fails (a unique
   * key, say) is rolled back alone and reported `Failed`; throws only when the transaction itself
   * fails, rolled back (a batch of one unit reports its failure instead).
   */
  readonly write: (units: ReadonlyArray<WriteUnit>) => ReadonlyArray<BatchOutcome>
  /** Rolls back the transaction open on the connection. */
  readonly rollback: () => void
}

export const makeSqliteBatch = ({ counts, db, execute, measured, prepare }: SqliteConnection): SqliteBatch => {
  // IMMEDIATE: the write lock is taken (or, held by another process, refused at once and tried
  // again later) before the first statement. A deferred transaction that reads first (a unit's
  // guard) and then writes after another process has committed is refused at once with
  // SQLITE_BUSY, without waiting: its snapshot is stale.
  const begin = db.prepare("BEGIN IMMEDIATE")
  const commit = db.prepare("COMMIT")
  const rollback = db.prepare("ROLLBACK")
  const savepoint = db.prepare("SAVEPOINT unit")
  const releaseSavepoint = db.prepare("RELEASE unit")
  const rollbackToSavepoint = db.prepare("ROLLBACK TO unit")
  // Released by the `COMMIT`.
  const batchSavepoint = db.prepare("SAVEPOINT batch")
  const rollbackToBatch = db.prepare("ROLLBACK TO batch")

  /**
   * A unit's statement. An insert that asks for its rows' `seq`s is told them without `RETURNING`
   * (which costs about a sixth of an event insert): the rows of one statement take consecutive
   * rowids, the last of which the insert reports.
   */
  const executeInUnit = (s: Statement): ReadonlyArray<Record<string, unknown>> => {
    const rows = s.sequencedRows
    if (rows === undefined) return execute(prepare(s.sql), s.params)
    const statement = prepare(s.sql)
    const last = Number(measured(statement, () => statement.run(...s.params)).lastInsertRowid)
    return Array.from({ length: rows }, (_, index) => ({ seq: last - rows + 1 + index }))
  }

  const writeUnit = (unit: WriteUnit): BatchOutcome => {
    for (const guard of unit.guards ?? []) if (execute(prepare(guard.sql), guard.params).length === 0) return { _tag: "Refused" }
    return { _tag: "Written", rows: unit.statements.map(executeInUnit) }
  }

  const inSavepoint = (unit: WriteUnit): BatchOutcome => {
    savepoint.run()
    try {
      const outcome = writeUnit(unit)
      releaseSavepoint.run()
      return outcome
    } catch (cause) {
      rollbackToSavepoint.run()
      releaseSavepoint.run()
      return { _tag: "Failed", message: messageOf(cause) }
    }
  }

  /** Several units: all at once, or, when one fails, each alone. */
  const writeUnits = (units: ReadonlyArray<WriteUnit>): ReadonlyArray<BatchOutcome> => {
    batchSavepoint.run()
    try {
      return units.map(writeUnit)
    } catch (failed) {
      // A failure that ended the transaction itself (a full disk) has no savepoint to go back to:
      // the batch fails with it, not with the savepoint's absence.
      if (!db.inTransaction) throw failed
      rollbackToBatch.run()
      return units.map(inSavepoint)
    }
  }

  return {
    begin: () => {
      begin.run()
    },
    write: (units) => {
      try {
        const outcomes = units.length === 1 ? [writeUnit(units[0] ?? { statements: [] })] : writeUnits(units)
        const committing = performance.now()
        commit.run()
        counts.commitMillis += performance.now() - committing
        counts.writeTransactions++
        return outcomes
      } catch (cause) {
        if (db.inTransaction) rollback.run()
        if (units.length === 1) return [{ _tag: "Failed", message: messageOf(cause) }]
        throw cause
      }
    },
    rollback: () => {
      rollback.run()
    }
  }
}
