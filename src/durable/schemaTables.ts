/**
 * The store's tables as they were first made (migrations 0001-0010): instances, conversations,
 * messages, runs, events, approvals, leases, deliveries, activations, grants and tokens. Written in
 * the SQL that SQLite and PostgreSQL share; where they differ, `onDialectOrElse` picks.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** A key numbered by the database as rows come, in either dialect. */
export const serialKey = (sql: SqlClient.SqlClient): string =>
  sql.onDialectOrElse({ pg: () => "BIGSERIAL PRIMARY KEY", orElse: () => "INTEGER PRIMARY KEY AUTOINCREMENT" })

export const init = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const serial = serialKey(sql)
  yield* sql`CREATE TABLE instances (
    agent TEXT NOT NULL,
    id TEXT NOT NULL,
    context TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (agent, id)
  )`
  yield* sql`CREATE TABLE conversations (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
  )`
  yield* sql`CREATE TABLE messages (
    conversation_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (conversation_id, seq)
  )`
  yield* sql`CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    status TEXT NOT NULL,
    input TEXT NOT NULL,
    output TEXT,
    error TEXT,
    created_at BIGINT NOT NULL,
    started_at BIGINT,
    finished_at BIGINT
  )`
  yield* sql`CREATE INDEX runs_by_created ON runs (created_at)`
  yield* sql`CREATE INDEX runs_by_status ON runs (status)`
  yield* sql`CREATE INDEX runs_by_conversation ON runs (conversation_id, created_at)`
  yield* sql.unsafe(`CREATE TABLE events (
    seq ${serial},
    id TEXT NOT NULL UNIQUE,
    time BIGINT NOT NULL,
    type TEXT NOT NULL,
    trace_id TEXT NOT NULL,
    span_id TEXT NOT NULL,
    parent_span_id TEXT,
    run_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    release TEXT NOT NULL,
    data TEXT NOT NULL
  )`)
  yield* sql`CREATE INDEX events_by_run ON events (run_id, seq)`
})

export const durableExecution = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE runs ADD COLUMN idempotency_key TEXT`
  yield* sql`ALTER TABLE runs ADD COLUMN steered_from TEXT`
  yield* sql`CREATE UNIQUE INDEX runs_by_idempotency_key ON runs (idempotency_key)`
  yield* sql`CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    tool TEXT NOT NULL,
    input TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    decided_at BIGINT,
    UNIQUE (run_id, tool_call_id)
  )`
  yield* sql`CREATE INDEX approvals_by_status ON approvals (status, expires_at)`
  yield* sql`CREATE TABLE conversation_leases (
    conversation_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    token BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
  )`
})

export const childRuns = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE runs ADD COLUMN parent_run_id TEXT`
  yield* sql`ALTER TABLE runs ADD COLUMN parent_tool_call_id TEXT`
  yield* sql`CREATE INDEX runs_by_parent ON runs (parent_run_id, parent_tool_call_id)`
})

export const traces = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE runs ADD COLUMN trace_id TEXT`
  yield* sql`ALTER TABLE runs ADD COLUMN parent_span_id TEXT`
  yield* sql`CREATE INDEX events_by_time ON events (time)`
  yield* sql`CREATE INDEX events_by_conversation ON events (conversation_id, seq)`
})

export const deliveries = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE deliveries (
    id TEXT PRIMARY KEY,
    webhook TEXT NOT NULL,
    status TEXT NOT NULL,
    result TEXT,
    received_at BIGINT NOT NULL
  )`
})

export const activations = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE activations (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    spec TEXT NOT NULL,
    status TEXT NOT NULL,
    next_fire BIGINT,
    last_fire BIGINT,
    last_run_id TEXT,
    updated_at BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX activations_by_next_fire ON activations (status, next_fire)`
  yield* sql`ALTER TABLE runs ADD COLUMN source TEXT`
})

export const runUsage = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE runs ADD COLUMN input_tokens BIGINT NOT NULL DEFAULT 0`
  yield* sql`ALTER TABLE runs ADD COLUMN output_tokens BIGINT NOT NULL DEFAULT 0`
  yield* sql`ALTER TABLE runs ADD COLUMN cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0`
  yield* sql`ALTER TABLE runs ADD COLUMN unpriced_turns INTEGER NOT NULL DEFAULT 0`
  yield* sql`CREATE INDEX runs_by_instance ON runs (agent, instance_id, created_at)`
})

export const grants = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE grants (
    conversation_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    tool TEXT NOT NULL,
    approval_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (conversation_id, tool)
  )`
})

/** Every table of the store, without its prefix. */
const tables = ["instances", "conversations", "messages", "runs", "events", "approvals", "conversation_leases", "deliveries", "activations", "grants"]

/** Foundry's tables carry a prefix, so that a PostgreSQL database shared with other applications cannot collide. */
export const prefixedTables = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  for (const table of tables) yield* sql.unsafe(`ALTER TABLE ${table} RENAME TO foundry_${table}`)
})

/** API tokens: only a hash of each secret is kept; the token itself is shown once, at creation. */
export const tokens = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE foundry_tokens (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    scope TEXT NOT NULL,
    hash TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    last_used_at BIGINT,
    revoked_at BIGINT
  )`
})
