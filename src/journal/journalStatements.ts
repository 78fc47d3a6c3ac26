/**
 * The statements the run journal writes, in the SQL that SQLite and PostgreSQL share (`?`
 * placeholders; the PostgreSQL database numbers them).
 */
import { activationStatus, removeActivation, saveActivation } from "../durable/ActivationStorage.js"
import type { SqlValue, Statement } from "../durable/Database.js"
import { finalStatuses, finalStatusesSql } from "../durable/records.js"
import { textByCount } from "../durable/textByCount.js"
import type { Lease, NewApproval, NewRun, RunUpdate, TimerChange, UsageAdded } from "./journalRecords.js"

/**
 * The time lease statements judge and write expiries by: `sql` where a statement reads it, with
 * `params(now)` its values. The process's clock (`now`, a parameter) on SQLite, one machine; on
 * PostgreSQL the database's, so that runners whose clocks disagree agree on whether a lease is live
 * (a runner ahead of the others took their leases while they were live).
 */
export interface LeaseTime {
  readonly sql: string
  readonly params: (now: number) => ReadonlyArray<SqlValue>
}

// Typed, as PostgreSQL cannot tell the type of `? + ?`.
export const processTime: LeaseTime = { sql: "CAST(? AS BIGINT)", params: (now) => [now] }

/** PostgreSQL's clock as it reads it (not the transaction's start), in milliseconds since the epoch. */
export const databaseTime: LeaseTime = { sql: "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)", params: () => [] }

/** The instance, made with an empty context on first use. */
export const ensureInstance = (agent: string, id: string, now: number): Statement => ({
  sql: `INSERT INTO foundry_instances (agent, id, context, created_at, updated_at) VALUES (?, ?, '{}', ?, ?)
    ON CONFLICT (agent, id) DO NOTHING`,
  params: [agent, id, now, now]
})

/**
 * The guard of a submission: a row unless the instance exists and is paused or archived (an
 * instance made by this submission takes runs).
 */
export const instanceTakesRuns = (agent: string, id: string): Statement => ({
  sql: "SELECT 1 AS open WHERE NOT EXISTS (SELECT 1 FROM foundry_instances WHERE agent = ? AND id = ? AND status <> 'active')",
  params: [agent, id]
})

export const insertConversation = (id: string, agent: string, instanceId: string, now: number): Statement => ({
  sql: "INSERT INTO foundry_conversations (id, agent, instance_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
  params: [id, agent, instanceId, now, now]
})

/** A new message arrived in the conversation. */
export const touchConversation = (id: string, now: number): Statement => ({
  sql: "UPDATE foundry_conversations SET updated_at = ? WHERE id = ?",
  params: [now, id]
})

/**
 * A queued run; `fingerprint` is its submission's, kept beside its idempotency key. It is numbered
 * after the conversation's last run (its acceptance order). The conversation's row was written
 * first in the same transaction, so on PostgreSQL two submissions to one conversation take their
 * numbers one after the other.
 */
export const insertRun = (run: NewRun, now: number, fingerprint: string | null): Statement => ({
  sql: `INSERT INTO foundry_runs (id, agent, instance_id, conversation_id, input, status, created_at, idempotency_key,
    steered_from, parent_run_id, parent_tool_call_id, trace_id, parent_span_id, source, idempotency_fingerprint, release, seq)
    VALUES (?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
      (SELECT COALESCE(MAX(seq), 0) + 1 FROM foundry_runs WHERE conversation_id = ?))`,
  params: [
    run.id,
    run.agent,
    run.instanceId,
    run.conversationId,
    run.input,
    now,
    run.idempotencyKey ?? null,
    run.steeredFrom ?? null,
    run.parentRunId ?? null,
    run.parentToolCallId ?? null,
    run.traceId ?? null,
    run.parentSpanId ?? null,
    run.source === undefined ? null : JSON.stringify(run.source),
    fingerprint,
    run.release,
    run.conversationId
  ]
})

export const idempotencyFingerprint = (runId: string): Statement => ({
  sql: "SELECT idempotency_fingerprint FROM foundry_runs WHERE id = ?",
  params: [runId]
})

/** The run goes on another release than the one it started on. */
export const moveToRelease = (id: string, release: string): Statement => ({
  sql: "UPDATE foundry_runs SET release = ? WHERE id = ?",
  params: [release, id]
})

export const runStatus = (id: string): Statement => ({ sql: "SELECT status FROM foundry_runs WHERE id = ?", params: [id] })

/**
 * The run's status, and the runs of its conversation accepted before it that have not run yet
 * (queued, or running under a lease nobody renews any more), each row with its `seq`.
 */
export const runInLine = (run: { readonly id: string; readonly conversationId: string }): Statement => ({
  sql: `SELECT id, status, seq FROM foundry_runs WHERE id = ?
    UNION ALL
    SELECT id, status, seq FROM foundry_runs WHERE status IN ('queued', 'running') AND conversation_id = ?
      AND seq < (SELECT seq FROM foundry_runs WHERE id = ?)`,
  params: [run.id, run.conversationId, run.id]
})

const usageAssignments = "input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, cost_usd = cost_usd + ?, unpriced_turns = unpriced_turns + ?"

/** The texts of one kind of update of a run's row: alone, and with the step's usage added. */
const runUpdate = (assignments: string) => ({
  alone: `UPDATE foundry_runs SET ${assignments} WHERE id = ?`,
  withUsage: `UPDATE foundry_runs SET ${assignments}, ${usageAssignments} WHERE id = ?`
})
// A run going on or made to wait keeps the moment on its row (`moved_at`): adoption reads when a
// suspended run was last suspended or resumed there, as its events may have been pruned since.
const toRunning = runUpdate("status = 'running', started_at = COALESCE(started_at, ?), moved_at = ?")
const toEnded = runUpdate("status = ?, output = ?, error = ?, finished_at = ?, started_at = COALESCE(started_at, ?)")
const toWaiting = runUpdate("status = ?, started_at = COALESCE(started_at, ?), moved_at = ?")

const updateRunRow = (id: string, texts: ReturnType<typeof runUpdate>, params: ReadonlyArray<SqlValue>, usage: UsageAdded | undefined): Statement =>
  usage === undefined
    ? { sql: texts.alone, params: [...params, id] }
    : { sql: texts.withUsage, params: [...params, usage.inputTokens, usage.outputTokens, usage.costUsd, usage.unpricedTurns, id] }

/**
 * A status change, with the usage of the step's turns: starting sets `started_at` (the first
 * start: a run resumed after waiting keeps it, so its duration counts the wait), ending sets
 * `finished_at` and the output or error.
 */
export const updateRun = (id: string, update: RunUpdate, now: number, starts = false, usage?: UsageAdded): Statement => {
  if (update.status === "running") return updateRunRow(id, toRunning, [now, now], usage)
  // `starts`: the step that starts the run ends it or makes it wait too; else a start time stays as it was.
  const startedAt = starts ? now : null
  if (finalStatuses.has(update.status)) {
    return updateRunRow(id, toEnded, [update.status, update.output ?? null, update.error ?? null, now, startedAt], usage)
  }
  return updateRunRow(id, toWaiting, [update.status, startedAt, now], usage)
}

const usageAlone = `UPDATE foundry_runs SET ${usageAssignments} WHERE id = ?`

/** The usage of a step that changes no status. */
export const addUsage = (id: string, usage: UsageAdded): Statement => ({
  sql: usageAlone,
  params: [usage.inputTokens, usage.outputTokens, usage.costUsd, usage.unpricedTurns, id]
})

/**
 * The most messages one statement appends. A history is appended in chunks whose sizes are powers
 * of two up to this: whatever its length, a few statements of at most seven texts (PostgreSQL
 * prepares a name for the first texts it sees only).
 */
const largestChunk = 64

/**
 * The next messages of the conversation, in order, numbered after the last: a step's (a run's
 * first answer goes with its user message) in one statement.
 */
export const appendMessages = (conversationId: string, runId: string, bodies: ReadonlyArray<string>, now: number): Array<Statement> => {
  const appended: Array<Statement> = []
  let from = 0
  while (from < bodies.length) {
    let size = largestChunk
    while (size > bodies.length - from) size /= 2
    const chunk = bodies.slice(from, from + size)
    const [only] = chunk
    appended.push(chunk.length === 1 && only !== undefined ? appendOne(conversationId, runId, only, now) : appendSeveral(conversationId, runId, chunk, now))
    from += size
  }
  return appended
}

const appendOneText = `INSERT INTO foundry_messages (conversation_id, seq, run_id, body, created_at)
    SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ? FROM foundry_messages WHERE conversation_id = ?`

const appendOne = (conversationId: string, runId: string, body: string, now: number): Statement => ({
  sql: appendOneText,
  params: [conversationId, runId, body, now, conversationId]
})

// `VALUES` names its columns `column1`, `column2`, ... in SQLite and PostgreSQL alike.
const appendSeveralText = textByCount((count) =>
  `INSERT INTO foundry_messages (conversation_id, seq, run_id, body, created_at)
    SELECT ?, last.seq + added.column1, ?, added.column2, ?
    FROM (SELECT COALESCE(MAX(seq), 0) AS seq FROM foundry_messages WHERE conversation_id = ?) AS last,
      (VALUES ${Array.from({ length: count }, (_, i) => `(${i + 1}, ?)`).join(", ")}) AS added`
)

const appendSeveral = (conversationId: string, runId: string, bodies: ReadonlyArray<string>, now: number): Statement => ({
  sql: appendSeveralText(bodies.length),
  params: [conversationId, runId, now, conversationId, ...bodies]
})

/**
 * The check of a step that ends a run from outside its execution (a cancel): a row while the run
 * has not ended, so that it ends once however many ask at once. On PostgreSQL the run's row is
 * locked until the step commits: a second such step waits, then finds the run ended.
 */
export const notEndedGuard = (dialect: "sqlite" | "pg") => {
  const lock = dialect === "pg" ? " FOR UPDATE" : ""
  const sql = `SELECT 1 FROM foundry_runs WHERE id = ? AND status NOT IN ${finalStatusesSql}${lock}`
  // A step that revokes the lease of a run running elsewhere locks the lease's row first, then the
  // run's, in the order a step's guard (`leaseGuard`) locks them: neither waits for the other's.
  const withLease = leaseAndRun("", lock)
  return (run: { readonly id: string; readonly conversationId: string }, revokes: boolean): Statement =>
    revokes ? { sql: withLease, params: [run.id, run.conversationId] } : { sql, params: [run.id] }
}

/** A row while run `runId`'s last message in its conversation is the one numbered `seq` (0: while it has none). */
export const runMessagesEndAt = (conversationId: string, runId: string, seq: number): Statement => ({
  sql: `SELECT 1 AS ends WHERE COALESCE((SELECT MAX(seq) FROM foundry_messages WHERE conversation_id = ? AND run_id = ?), 0) = ?`,
  params: [conversationId, runId, seq]
})

/**
 * A row while the run (the first parameter) has not ended, read from its conversation's lease (the
 * second) joined to it, `condition` on the lease added: on PostgreSQL, with `lock`, the lease's row
 * is locked first, then the run's.
 */
const leaseAndRun = (condition: string, lock: string): string =>
  `SELECT lease.token FROM foundry_conversation_leases lease JOIN foundry_runs run ON run.id = ?
    WHERE lease.conversation_id = ?${condition} AND run.status NOT IN ${finalStatusesSql}${lock}`

/**
 * The fencing check of a run's step: a row while `lease` is the conversation's current grant and
 * the run has not ended. A run another process ended (a cancel that found it queued, its executor
 * between its status read and its first step) takes no further step. On PostgreSQL both rows are
 * locked until the transaction ends, so no takeover or cancel can commit between check and write.
 */
export const leaseGuard = (dialect: "sqlite" | "pg") => {
  const sql = leaseAndRun(" AND lease.token = ?", dialect === "pg" ? " FOR SHARE" : "")
  return (lease: Lease, runId: string): Statement => ({ sql, params: [runId, lease.conversationId, lease.token] })
}

/** Takes the lease if it is free, expired or already `owner`'s, for `ttlMillis` from `now` (by `time`); returns the new token when taken. */
export const acquireLease = (time: LeaseTime, conversationId: string, owner: string, now: number, ttlMillis: number): Statement => ({
  sql: `INSERT INTO foundry_conversation_leases (conversation_id, owner, token, expires_at) VALUES (?, ?, 1, ${time.sql} + ?)
    ON CONFLICT (conversation_id) DO UPDATE SET
      owner = excluded.owner,
      token = foundry_conversation_leases.token + 1,
      expires_at = excluded.expires_at
    WHERE foundry_conversation_leases.expires_at < ${time.sql} OR foundry_conversation_leases.owner = ?
    RETURNING token`,
  params: [conversationId, owner, ...time.params(now), ttlMillis, ...time.params(now), owner]
})

/**
 * Who holds the conversation's lease, with which token, when it expires unless renewed, and in how
 * long from `now` (by `time`).
 */
export const leaseHolder = (time: LeaseTime, conversationId: string, now: number): Statement => ({
  sql: `SELECT owner, token, expires_at, expires_at - ${time.sql} AS expires_in FROM foundry_conversation_leases WHERE conversation_id = ?`,
  params: [...time.params(now), conversationId]
})

/** Takes the lease from the grant `token` (a holder known to be dead), whatever its expiry, for `ttlMillis` from `now`; returns the new token. */
export const takeOverLease = (time: LeaseTime, conversationId: string, token: number, owner: string, now: number, ttlMillis: number): Statement => ({
  sql: `UPDATE foundry_conversation_leases SET owner = ?, token = token + 1, expires_at = ${time.sql} + ?
    WHERE conversation_id = ? AND token = ? RETURNING token`,
  params: [owner, ...time.params(now), ttlMillis, conversationId, token]
})

/**
 * Where to look for runs nobody executes, each row with its conversation's lease (`owner` null
 * when it never had one, `expired` 1 when it has expired at `now` by `time`), leaving out the
 * leases `owner` holds then: the conversations with
 * queued or running runs (`run_id` null; `owner`'s own among them once given up), and the
 * suspended runs that wait on nothing any more (no approval pending, no child still going: the
 * test of `Store.suspendedReadyToResume`) whose lease was last someone else's, with their agent
 * and when they came to wait on nothing (`decided_at`, their last approval's decision;
 * `child_ended_at`, their last child's end) and were last suspended or resumed (`moved_at`, kept
 * on the run's row by the steps that suspend and resume it: their events may have been pruned).
 * One read for both, found from the runs' status index, so it reads what is in flight or
 * suspended, not every conversation ever leased. A run's approvals are found by its id (`NOT IN`:
 * with `status = 'pending'` in the subquery SQLite searched every pending approval for each run).
 */
export const adoptionCandidates = (time: LeaseTime, owner: string, now: number): Statement => ({
  sql: `SELECT DISTINCT r.conversation_id, NULL AS run_id, NULL AS agent, l.owner, l.token, l.expires_at,
      CASE WHEN l.expires_at < ${time.sql} THEN 1 ELSE 0 END AS expired,
      CAST(NULL AS BIGINT) AS decided_at, CAST(NULL AS BIGINT) AS child_ended_at, CAST(NULL AS BIGINT) AS moved_at FROM foundry_runs r
    LEFT JOIN foundry_conversation_leases l ON l.conversation_id = r.conversation_id
    WHERE r.status IN ('queued', 'running') AND (l.owner IS NULL OR l.owner <> ? OR l.expires_at < ${time.sql})
    UNION ALL
    SELECT p.conversation_id, p.id, p.agent, l.owner, l.token, l.expires_at,
      CASE WHEN l.expires_at < ${time.sql} THEN 1 ELSE 0 END AS expired,
      (SELECT MAX(a.decided_at) FROM foundry_approvals a WHERE a.run_id = p.id) AS decided_at,
      (SELECT MAX(c.finished_at) FROM foundry_runs c WHERE c.parent_run_id = p.id AND c.parent_tool_call_id IS NOT NULL) AS child_ended_at,
      p.moved_at
    FROM foundry_runs p
    LEFT JOIN foundry_conversation_leases l ON l.conversation_id = p.conversation_id
    WHERE p.status = 'suspended' AND (l.owner IS NULL OR l.owner <> ?)
      AND 'pending' NOT IN (SELECT a.status FROM foundry_approvals a WHERE a.run_id = p.id)
      AND NOT EXISTS (SELECT 1 FROM foundry_runs c WHERE c.parent_run_id = p.id AND c.parent_tool_call_id IS NOT NULL
        AND c.status NOT IN ${finalStatusesSql})`,
  params: [...time.params(now), owner, ...time.params(now), ...time.params(now), owner]
})

/**
 * Takes the lease from the grant `token` if it is still expired at `now` (its holder did not renew
 * it since), for `ttlMillis`; returns the new token.
 */
export const takeOverExpiredLease = (time: LeaseTime, conversationId: string, token: number, owner: string, now: number, ttlMillis: number): Statement => ({
  sql: `UPDATE foundry_conversation_leases SET owner = ?, token = token + 1, expires_at = ${time.sql} + ?
    WHERE conversation_id = ? AND token = ? AND expires_at < ${time.sql} RETURNING token`,
  params: [owner, ...time.params(now), ttlMillis, conversationId, token, ...time.params(now)]
})

/**
 * Extends `lease` while it is the current grant, not released (a release leaves the token as it
 * was: renewing it would hold the conversation again), and `runId`, the run it is held for, has not
 * ended.
 */
export const renewLease = (time: LeaseTime, lease: Lease, runId: string, now: number, ttlMillis: number): Statement => ({
  sql: `UPDATE foundry_conversation_leases SET expires_at = ${time.sql} + ? WHERE conversation_id = ? AND token = ? AND expires_at > 0
    AND NOT EXISTS (SELECT 1 FROM foundry_runs WHERE id = ? AND status IN ${finalStatusesSql}) RETURNING token`,
  params: [...time.params(now), ttlMillis, lease.conversationId, lease.token, runId]
})

/**
 * Takes a live lease away from a holder other than `owner` (its run was cancelled by `owner`): a
 * new token, so the holder's writes are fenced off and its renewal fails, and expired, so the next
 * claim has it.
 */
export const revokeLease = (time: LeaseTime, conversationId: string, owner: string, now: number): Statement => ({
  sql: `UPDATE foundry_conversation_leases SET token = token + 1, expires_at = 0
    WHERE conversation_id = ? AND expires_at > ${time.sql} AND owner <> ?`,
  params: [conversationId, ...time.params(now), owner]
})

/**
 * An approval asked for, pending. The gate asks only for a call it found none for, under the
 * run's lease, so a call's second approval is a bug: it is not stored (the run's read of its
 * approval after the step finds none, and says so).
 */
export const askApproval = (approval: NewApproval, now: number): Statement => ({
  sql: `INSERT INTO foundry_approvals (id, run_id, tool_call_id, agent, tool, input, status, created_at, expires_at)
    VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT (run_id, tool_call_id) DO NOTHING`,
  params: [approval.id, approval.runId, approval.toolCallId, approval.agent, approval.tool, JSON.stringify(approval.input), now, approval.expiresAt]
})

/** Released leases expire rather than vanish, so the next grant's token is still larger. */
export const releaseLease = (lease: Lease): Statement => ({
  sql: "UPDATE foundry_conversation_leases SET expires_at = 0 WHERE conversation_id = ? AND token = ?",
  params: [lease.conversationId, lease.token]
})

/** The statement that makes a timer tool call's change to the timers. */
export const timerStatement = (change: TimerChange, now: number): Statement => {
  switch (change._tag) {
    case "Save":
      return saveActivation(change.activation, now)
    case "SetStatus":
      return activationStatus(change.id, change.status, change.nextFire, now)
    case "Remove":
      return removeActivation(change.id)
  }
}
