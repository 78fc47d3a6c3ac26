/**
 * Where events are kept: written as one multi-row insert inside whichever write unit records the
 * step they belong to (the store assigns `seq`, in order), read back by filter and cursor, and
 * pruned by age and count.
 */
import type { Statement as SqlStatement } from "@effect/sql"
import { Context, Effect, Either, Layer, ParseResult, Schema } from "effect"
import { Database, type Row, type SqlValue, type Statement } from "../durable/Database.js"
import { pruneBatch, removedInBatches } from "../durable/inBatches.js"
import { failAs, type StoreError } from "../durable/StoreError.js"
import { textByCount } from "../durable/textByCount.js"
import { type AnyEvent, ephemeralTypes, FoundryEvent, withEnvelope } from "./FoundryEvent.js"

/** An event as it is written: everything but the `seq` the store gives it (any type, its `data` that type's). */
export type UnsequencedEvent = AnyEvent<"seq">

/** Filters for reading events, oldest first (or newest first); `after` and `before` are `seq` cursors. */
export interface EventFilter {
  readonly runId?: string | undefined
  readonly conversationId?: string | undefined
  readonly instanceId?: string | undefined
  readonly agent?: string | undefined
  readonly type?: string | undefined
  /** Events at or after this time (ms since the epoch). */
  readonly since?: number | undefined
  /**
   * `false`: none of the ephemeral events (text deltas) a live follower would get. They are never
   * stored; a follower that does not want them spares every process on the store making and
   * sending them.
   */
  readonly deltas?: boolean | undefined
  /** The text deltas of this conversation's runs only (every other event as the rest of the filter says). */
  readonly deltasOf?: string | undefined
  readonly after?: number | undefined
  /** Events before this `seq`. */
  readonly before?: number | undefined
  /** The newest events first: a page of the latest ones, paged back with `before`. */
  readonly newestFirst?: boolean | undefined
  readonly limit?: number | undefined
}

/** Whether a live event matches a filter (the same fields the store filters on). */
export const matchesFilter = (filter: EventFilter, event: FoundryEvent): boolean =>
  (filter.runId === undefined || event.runId === filter.runId) &&
  (filter.conversationId === undefined || event.conversationId === filter.conversationId) &&
  (filter.instanceId === undefined || event.instanceId === filter.instanceId) &&
  (filter.agent === undefined || event.agent === filter.agent) &&
  (filter.type === undefined || event.type === filter.type) &&
  (filter.since === undefined || event.time >= filter.since) &&
  (!ephemeralTypes.has(event.type) || (filter.deltas !== false && (filter.deltasOf === undefined || event.conversationId === filter.deltasOf)))

/** How long events are kept: by age, by count, or both. */
export interface EventRetention {
  readonly olderThan?: number | undefined
  readonly keepLatest?: number | undefined
}

/** What a look at the store's newest events found (`EventStorage.readOn`). */
export interface ReadOn {
  /** The events read that the reader did not already have, oldest first. */
  readonly events: ReadonlyArray<FoundryEvent>
  /** The `seq` of the last event read (the look's `after` when there was none). */
  readonly readTo: number
  /** Whether the look read as many as it was allowed to: there may be more. */
  readonly full: boolean
}

/** Event storage. */
export class EventStorage extends Context.Tag("foundry/EventStorage")<EventStorage, {
  readonly list: (filter: EventFilter) => Effect.Effect<ReadonlyArray<FoundryEvent>, StoreError>
  /**
   * The next `limit` events stored after `after`, in order, but only those `known` does not
   * claim whole: a reader of everything written (the event log's tail) already has the events its
   * own process wrote, and reading them back, columns and all, decoded, would cost it every event
   * written, to throw most of them away.
   */
  readonly readOn: (after: number, limit: number, known: (seq: number) => boolean) => Effect.Effect<ReadOn, StoreError>
  /** The `seq` of the newest event stored, 0 with none. */
  readonly newestSeq: Effect.Effect<number, StoreError>
  /** Deletes events before `olderThan` (ms since the epoch) and all but the newest `keepLatest`; returns how many went. */
  readonly prune: (retention: EventRetention) => Effect.Effect<number, StoreError>
}>() {}

const columns = "(id, time, type, trace_id, span_id, parent_span_id, run_id, conversation_id, instance_id, agent, release, data)"
const row = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"

const insertText = textByCount((rows) => `INSERT INTO foundry_events ${columns} VALUES ${Array.from({ length: rows }, () => row).join(", ")}`)

/** The statement that inserts `events` (at least one) and returns each one's `seq`, in order. */
export const insertEvents = (events: ReadonlyArray<UnsequencedEvent>): Statement => {
  const params: Array<SqlValue> = []
  for (const e of events) {
    params.push(e.id, e.time, e.type, e.traceId, e.spanId, e.parentSpanId, e.runId, e.conversationId, e.instanceId, e.agent, e.release, JSON.stringify(e.data))
  }
  return { sql: insertText(events.length), sequencedRows: events.length, params }
}

/** The events with the `seq` the store gave each, from the rows `insertEvents` returned. */
export const sequenced = (events: ReadonlyArray<UnsequencedEvent>, rows: ReadonlyArray<Row>): ReadonlyArray<FoundryEvent> =>
  events.map((event, index) => withEnvelope(event, { id: event.id, time: event.time, release: event.release, seq: Number(rows[index]?.seq ?? 0) }))

/**
 * A stored row decoded as the event its type says: the envelope from its columns and the data
 * parsed from its JSON text, checked by the union (which picks the type's schema by `type`), not
 * renamed and re-checked as a row first. A row stored by an older version whose data no longer
 * matches its type's schema does not decode: `list` skips it (docs/decisions.md, "Typed event
 * payloads").
 */
const decodeEvent = Schema.decodeUnknownEither(FoundryEvent)

const decodeRow = (row: Row): Either.Either<FoundryEvent, string> => {
  let data: unknown
  try {
    data = typeof row.data === "string" ? JSON.parse(row.data) : row.data
  } catch {
    return Either.left("data: is not JSON")
  }
  return Either.mapLeft(
    decodeEvent({
      id: row.id,
      seq: row.seq,
      time: row.time,
      traceId: row.trace_id,
      spanId: row.span_id,
      parentSpanId: row.parent_span_id,
      runId: row.run_id,
      conversationId: row.conversation_id,
      instanceId: row.instance_id,
      agent: row.agent,
      release: row.release,
      type: row.type,
      data
    }),
    whyUnreadable
  )
}

/** The first reason a row did not decode, short enough for a log line: `data.output: is missing`. */
const whyUnreadable = (error: ParseResult.ParseError): string => {
  const [first] = ParseResult.ArrayFormatter.formatErrorSync(error)
  return first === undefined ? error.message : `${first.path.join(".") || "row"}: ${first.message}`
}

/** Rows decoded as events; a row that does not decode is skipped and counted, the first one described. */
const decodeRows = (rows: ReadonlyArray<Row>, into: Array<FoundryEvent>, skips: Skips): void => {
  for (const row of rows) {
    const decoded = decodeRow(row)
    if (decoded._tag === "Right") into.push(decoded.right)
    else if (skips.count++ === 0) skips.first = `seq ${String(row.seq)} (${String(row.type)}): ${decoded.left}`
  }
}

/** The stored rows a read skipped: how many, and the first. */
interface Skips {
  count: number
  first: string
}

/** Says which stored events were skipped, if any. */
const warnSkipped = (skips: Skips) =>
  skips.count === 0 ? Effect.void : Effect.logWarning(
    `skipped ${skips.count} stored event(s) that do not match their type's schema (written by an older version?); the first: ${skips.first}`
  )

/**
 * The stretches of `seqs` (in order) that `known` does not claim, each as its first and last
 * `seq`: every event stored between those two is one of them (events commit in the order of their
 * numbers, so none comes later below the last one read).
 */
const unknownStretches = (seqs: ReadonlyArray<number>, known: (seq: number) => boolean): Array<readonly [number, number]> => {
  const stretches: Array<[number, number]> = []
  let open: [number, number] | undefined
  for (const seq of seqs) {
    if (known(seq)) open = undefined
    else if (open === undefined) stretches.push(open = [seq, seq])
    else open[1] = seq
  }
  return stretches
}

/**
 * Up to this many stretches of unknown events are read by their own ranges; beyond, the whole
 * range from the first to the last (a look between two busy writers would otherwise send a
 * statement as long as the other's steps are many).
 */
const stretchesReadApart = 8

/** The read of `count` stretches' rows. */
const stretchesText = textByCount((count) =>
  `SELECT * FROM foundry_events WHERE ${Array.from({ length: count }, () => "seq BETWEEN ? AND ?").join(" OR ")} ORDER BY seq`
)

/** Event storage on the `Database`. */
export const layer = Layer.effect(
  EventStorage,
  Effect.gen(function*() {
    const database = yield* Database
    const { sql } = database
    // Read on every event stream's path (a run's SSE stream reads its stored events first):
    // through `Database.read`, one prepared statement per shape of filter.
    const select = (filter: EventFilter, after: number | undefined, before: number | undefined, limit: number) => {
      const conditions: Array<string> = []
      const params: Array<SqlValue> = []
      const where = (condition: string, value: SqlValue | undefined) => {
        if (value === undefined) return
        conditions.push(condition)
        params.push(value)
      }
      where("run_id = ?", filter.runId)
      // Through the conversation's runs: events have no index by conversation (migration 0016).
      // The events of no conversation (an instance's, a delivery's) are those of no run.
      if (filter.conversationId === "") where("run_id = ?", "")
      else where("run_id IN (SELECT id FROM foundry_runs WHERE conversation_id = ?)", filter.conversationId)
      where("instance_id = ?", filter.instanceId)
      where("agent = ?", filter.agent)
      where("type = ?", filter.type)
      where("time >= ?", filter.since)
      where("seq > ?", after)
      where("seq < ?", before)
      const filtered = conditions.length === 0 ? "" : ` WHERE ${conditions.join(" AND ")}`
      const order = filter.newestFirst === true ? "DESC" : "ASC"
      return database.read({ sql: `SELECT * FROM foundry_events${filtered} ORDER BY seq ${order} LIMIT ?`, params: [...params, limit] })
    }

    return EventStorage.of({
      // A page has `limit` events unless the store has no more: readers take a short page as the
      // end. So when rows are skipped, the rows after them fill the page.
      list: (filter) =>
        Effect.gen(function*() {
          const limit = filter.limit ?? 1000
          const events: Array<FoundryEvent> = []
          const skips: Skips = { count: 0, first: "" }
          let after = filter.after
          let before = filter.before
          while (events.length < limit) {
            const wanted = limit - events.length
            const rows = yield* select(filter, after, before, wanted)
            decodeRows(rows, events, skips)
            const last = rows[rows.length - 1]
            if (last === undefined || rows.length < wanted) break
            if (filter.newestFirst === true) before = Number(last.seq)
            else after = Number(last.seq)
          }
          yield* warnSkipped(skips)
          return events
        }).pipe(failAs("listEvents")),

      // The numbers first (read from the key alone), then the rows of the stretches nobody here
      // has: alone on its store, a process reads no event back.
      readOn: (after, limit, known) =>
        Effect.gen(function*() {
          const numbered = yield* database.read({ sql: "SELECT seq FROM foundry_events WHERE seq > ? ORDER BY seq LIMIT ?", params: [after, limit] })
          const seqs = numbered.map((row) => Number(row.seq))
          const readTo = seqs[seqs.length - 1] ?? after
          const stretches = unknownStretches(seqs, known)
          const events: Array<FoundryEvent> = []
          const skips: Skips = { count: 0, first: "" }
          const [first] = stretches
          const last = stretches[stretches.length - 1]
          if (first !== undefined && last !== undefined) {
            // One statement either way: the stretches' own rows, or past a few of them the rows
            // from the first to the last, those known left undecoded.
            const apart = stretches.length <= stretchesReadApart
            const rows = yield* database.read(
              apart
                ? { sql: stretchesText(stretches.length), params: stretches.flat() }
                : { sql: stretchesText(1), params: [first[0], last[1]] }
            )
            decodeRows(apart ? rows : rows.filter((row) => !known(Number(row.seq))), events, skips)
          }
          yield* warnSkipped(skips)
          return { events, readTo, full: seqs.length === limit }
        }).pipe(failAs("readEvents")),

      newestSeq: Effect.map(
        database.read({ sql: "SELECT COALESCE(MAX(seq), 0) AS seq FROM foundry_events", params: [] }),
        (rows) => Number(rows[0]?.seq ?? 0)
      ).pipe(failAs("newestSeq")),

      prune: ({ keepLatest, olderThan }) =>
        Effect.gen(function*() {
          // Events are removed a batch at a time (see inBatches), oldest first.
          const removeWhere = (condition: SqlStatement.Fragment) =>
            removedInBatches(sql`DELETE FROM foundry_events WHERE seq IN
              (SELECT seq FROM foundry_events WHERE ${condition} ORDER BY seq LIMIT ${pruneBatch}) RETURNING seq`)
          let removed = 0
          if (olderThan !== undefined) removed += yield* removeWhere(sql`time < ${olderThan}`)
          if (keepLatest !== undefined) {
            // The newest not kept, counted by rows: numbers a rolled-back insert took leave gaps.
            const [newestGone] = yield* sql<{ readonly seq: number }>`SELECT seq FROM foundry_events ORDER BY seq DESC LIMIT 1 OFFSET ${keepLatest}`
            if (newestGone !== undefined) removed += yield* removeWhere(sql`seq <= ${Number(newestGone.seq)}`)
          }
          return removed
        }).pipe(failAs("pruneEvents"))
    })
  })
)

