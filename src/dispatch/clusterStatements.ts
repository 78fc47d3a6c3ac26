/**
 * What the cluster dispatcher reads and writes in the store besides the journal: a conversation's
 * unfinished runs in acceptance order, the conversations nobody executes, and each runner's report.
 */
import type { Statement } from "../durable/Database.js"
import type { LeaseTime } from "../journal/journalStatements.js"

/** The conversation's queued and running runs, in the order they were accepted. */
export const backlog = (conversationId: string): Statement => ({
  sql: `SELECT * FROM foundry_runs WHERE conversation_id = ? AND status IN ('queued', 'running') ORDER BY seq, created_at, id`,
  params: [conversationId]
})

/**
 * Conversations with queued or running runs whose lease nobody holds at `now` (by `time`, as the
 * journal judges leases): their runner died
 * (or a wake was lost), so someone must wake them. One run of each names the conversation. At
 * most `limit`, in the order of their ids, after `after`: a sweep goes on where the last stopped,
 * so that a backlog larger than a page (runs waiting in a live runner's lane hold no lease either)
 * does not keep the rest from ever being looked at.
 */
export const stranded = (time: LeaseTime, now: number, limit: number, after: string): Statement => ({
  sql: `SELECT r.conversation_id, MIN(r.id) AS run_id FROM foundry_runs r
    LEFT JOIN foundry_conversation_leases l ON l.conversation_id = r.conversation_id
    WHERE r.status IN ('queued', 'running') AND (l.conversation_id IS NULL OR l.expires_at < ${time.sql}) AND r.conversation_id > ?
    GROUP BY r.conversation_id ORDER BY r.conversation_id LIMIT ?`,
  params: [...time.params(now), after, limit]
})

/** This runner's report: which shards it holds and how many runs it executes. */
export const reportRunner = (
  report: { readonly address: string; readonly executor: string; readonly shards: ReadonlyArray<number>; readonly executing: number },
  startedAt: number,
  now: number
): Statement => ({
  sql: `INSERT INTO foundry_runners (address, executor, shards, executing, started_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (address) DO UPDATE SET executor = excluded.executor, shards = excluded.shards,
      executing = excluded.executing, started_at = excluded.started_at, updated_at = excluded.updated_at`,
  params: [report.address, report.executor, JSON.stringify(report.shards), report.executing, startedAt, now]
})

/** A runner that stopped cleanly takes its report with it. */
export const forgetRunner = (address: string): Statement => ({
  sql: "DELETE FROM foundry_runners WHERE address = ?",
  params: [address]
})

/** Every runner's latest report. */
export const runners: Statement = {
  sql: "SELECT address, executor, shards, executing, started_at, updated_at FROM foundry_runners ORDER BY address",
  params: []
}
