/**
 * The store's schema changes since its tables were first made (migrations 0011 on): columns,
 * indexes and tables added as features came. Written in the SQL that SQLite and PostgreSQL share;
 * where they differ, `onDialectOrElse` picks.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { serialKey } from "./schemaTables.js"

/**
 * What a repeated request is compared with: a run's submission (a repeated `Idempotency-Key` with
 * another request is refused) and the signature a delivery was claimed with (the same signed
 * delivery again is a replay).
 */
export const idempotencyFingerprint = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE foundry_runs ADD COLUMN idempotency_fingerprint TEXT`
  yield* sql`ALTER TABLE foundry_deliveries ADD COLUMN fingerprint TEXT`
})

/**
 * Runs of a conversation in acceptance order: the store numbers them as they are submitted, so
 * every process agrees on the order whichever accepted the message. Runners of a cluster report
 * what they hold, for `GET /api/cluster`.
 */
export const runOrder = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE foundry_runs ADD COLUMN seq BIGINT NOT NULL DEFAULT 0`
  yield* sql`CREATE INDEX foundry_runs_by_conversation ON foundry_runs (conversation_id, seq)`
  yield* sql`CREATE TABLE foundry_runners (
    address TEXT PRIMARY KEY,
    executor TEXT NOT NULL,
    shards TEXT NOT NULL,
    executing BIGINT NOT NULL,
    started_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
  )`
})

/**
 * Instances as managed data: a status (paused and archived instances take no new runs), an outside
 * provisioning key, and the capabilities each one installs with their config (secrets sealed apart).
 */
export const instanceLifecycle = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE foundry_instances ADD COLUMN status TEXT NOT NULL DEFAULT 'active'`
  yield* sql`ALTER TABLE foundry_instances ADD COLUMN status_reason TEXT`
  yield* sql`ALTER TABLE foundry_instances ADD COLUMN provisioning_key TEXT`
  yield* sql`CREATE UNIQUE INDEX foundry_instances_by_key ON foundry_instances (agent, provisioning_key)`
  yield* sql`CREATE TABLE foundry_installations (
    agent TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    capability TEXT NOT NULL,
    config TEXT NOT NULL,
    secrets TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (agent, instance_id, kind, capability)
  )`
  yield* sql`CREATE INDEX foundry_installations_by_capability ON foundry_installations (agent, kind, capability)`
})

/**
 * Releases deployed to the server: each with its bundled files (so a run pinned to it can be
 * resumed after a restart) and the change summary of its deploy; the current one in a row of its
 * own; and, on every run, the release it started on (`NULL` before: the current one).
 */
export const releases = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE foundry_runs ADD COLUMN release TEXT`
  yield* sql`CREATE INDEX foundry_runs_by_release ON foundry_runs (release)`
  yield* sql`CREATE TABLE foundry_releases (
    id TEXT PRIMARY KEY,
    created_at BIGINT NOT NULL,
    deployed_at BIGINT NOT NULL,
    deployed_by TEXT,
    summary TEXT NOT NULL,
    manifest TEXT NOT NULL,
    files TEXT NOT NULL
  )`
  yield* sql`CREATE TABLE foundry_release_current (
    name TEXT PRIMARY KEY,
    release_id TEXT NOT NULL,
    updated_at BIGINT NOT NULL
  )`
})

/**
 * Working environments: each scope's tree as numbered versions (a manifest of paths to content
 * hashes, one row per change, with the tool call that made it and its recorded outcome for
 * replay), the files' bytes once per content hash, and the artifacts runs present.
 */
export const environments = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE foundry_environment_blobs (
    hash TEXT PRIMARY KEY,
    content TEXT NOT NULL,
    size BIGINT NOT NULL
  )`
  yield* sql`CREATE TABLE foundry_environment_versions (
    environment TEXT NOT NULL,
    scope_key TEXT NOT NULL,
    version INTEGER NOT NULL,
    kind TEXT NOT NULL,
    label TEXT NOT NULL,
    manifest TEXT NOT NULL,
    files INTEGER NOT NULL,
    bytes BIGINT NOT NULL,
    run_id TEXT,
    tool_call_id TEXT,
    outcome TEXT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (environment, scope_key, version)
  )`
  yield* sql`CREATE INDEX foundry_environment_versions_by_tool_call ON foundry_environment_versions (environment, scope_key, tool_call_id)`
  yield* sql`CREATE TABLE foundry_artifacts (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    tool_call_id TEXT,
    path TEXT NOT NULL,
    caption TEXT,
    media_type TEXT NOT NULL,
    size BIGINT NOT NULL,
    hash TEXT NOT NULL,
    created_at BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX foundry_artifacts_by_run ON foundry_artifacts (run_id, created_at)`
})

/**
 * Events with two indexes fewer, as every run writes about ten (docs/performance.md: together a
 * third of an event insert, 6% of a run's CPU). No query looks an event up by `id`, whose ids are
 * unique by construction (`ids.ts`), so its unique index goes. A conversation's events are found
 * through its runs (`runs_by_conversation`, then `events_by_run`), so `events_by_conversation`
 * goes. SQLite cannot drop a table's constraint, so there the table is rebuilt, keeping its rows,
 * its other indexes and where its `seq` counter stood (events may have been pruned).
 */
const eventColumns = "seq, id, time, type, trace_id, span_id, parent_span_id, run_id, conversation_id, instance_id, agent, release, data"

export const lighterEvents = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.gen(function*() {
        // By the name PostgreSQL gave it (`events_id_key`, unless a shared schema had taken it).
        const unique = yield* sql<{ readonly name: string }>`SELECT c.conname AS name FROM pg_constraint c
          JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
          WHERE c.conrelid = 'foundry_events'::regclass AND c.contype = 'u' AND a.attname = 'id' AND cardinality(c.conkey) = 1`
        for (const { name } of unique) yield* sql.unsafe(`ALTER TABLE foundry_events DROP CONSTRAINT "${name}"`)
        yield* sql`DROP INDEX IF EXISTS events_by_conversation`
      }),
    orElse: () =>
      Effect.gen(function*() {
        const counter = yield* sql<{ readonly seq: number }>`SELECT seq FROM sqlite_sequence WHERE name = 'foundry_events'`
        yield* sql`CREATE TABLE foundry_events_rebuilt (
          seq INTEGER PRIMARY KEY AUTOINCREMENT,
          id TEXT NOT NULL,
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
        )`
        yield* sql`INSERT INTO foundry_events_rebuilt (${sql.literal(eventColumns)}) SELECT ${sql.literal(eventColumns)} FROM foundry_events`
        yield* sql`DROP TABLE foundry_events`
        yield* sql`ALTER TABLE foundry_events_rebuilt RENAME TO foundry_events`
        for (const { seq } of counter) {
          yield* sql`DELETE FROM sqlite_sequence WHERE name = 'foundry_events'`
          yield* sql`INSERT INTO sqlite_sequence (name, seq) VALUES ('foundry_events', ${seq})`
        }
        yield* sql`CREATE INDEX events_by_run ON foundry_events (run_id, seq)`
        yield* sql`CREATE INDEX events_by_time ON foundry_events (time)`
      })
  })
})

/**
 * Every time a release was made current, in order: deployed, rolled back to, or started with
 * `--release`, by whom, from which release, and what it changed. A release's own row keeps only
 * the last time; the releases kept before start the log with one entry each.
 */
export const deploymentLog = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const serial = serialKey(sql)
  yield* sql`CREATE TABLE foundry_deployments (
    seq ${sql.literal(serial)},
    release_id TEXT NOT NULL,
    action TEXT NOT NULL,
    deployed_at BIGINT NOT NULL,
    deployed_by TEXT,
    previous TEXT,
    summary TEXT NOT NULL
  )`
  yield* sql`INSERT INTO foundry_deployments (release_id, action, deployed_at, deployed_by, previous, summary)
    SELECT id, CASE WHEN deployed_by = 'start' THEN 'start' ELSE 'deploy' END, deployed_at, deployed_by, NULL, summary
    FROM foundry_releases ORDER BY deployed_at, id`
})

/** A decided approval says whether it approved its tool for the conversation: grants found by their approval. */
export const grantsByApproval = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX foundry_grants_by_approval ON foundry_grants (approval_id)`
})

/** The conversations listed most recently active first, all of them or an instance's (`GET /api/conversations`). */
export const conversationsByActivity = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX foundry_conversations_by_update ON foundry_conversations (updated_at, id)`
  yield* sql`CREATE INDEX foundry_conversations_by_instance ON foundry_conversations (agent, instance_id, updated_at)`
})

/**
 * The runs of a conversation not yet run, in their order: found by status, then conversation and
 * acceptance, as an executor holding a conversation's lease looks for runs accepted before its own.
 */
export const runsInFlightByConversation = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP INDEX runs_by_status`
  yield* sql`CREATE INDEX foundry_runs_by_status ON foundry_runs (status, conversation_id, seq)`
})

/**
 * Runs with two index entries fewer: every run writes a row that each index of the table takes,
 * and most runs have no idempotency key and no parent. Those two indexes keep only the runs that
 * have one; a lookup names a key or a parent (`= ?`, which no null matches), so it still finds
 * them by the index, and keys stay unique as before (nulls never clashed). The new indexes are
 * made before the old ones go: on PostgreSQL dropping an index locks its table against reads
 * until the migration commits, so the drops come last and are quick.
 */
export const sparseRunIndexes = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE UNIQUE INDEX foundry_runs_by_idempotency_key ON foundry_runs (idempotency_key) WHERE idempotency_key IS NOT NULL`
  yield* sql`CREATE INDEX foundry_runs_by_parent ON foundry_runs (parent_run_id, parent_tool_call_id) WHERE parent_run_id IS NOT NULL`
  yield* sql`DROP INDEX runs_by_idempotency_key`
  yield* sql`DROP INDEX runs_by_parent`
})

/**
 * Activations with their agent and instance as columns, found by them: an agent's timer tools read
 * the timers of their own instance only, where they read every instance's timers and picked theirs
 * out of the spec's JSON (millions of rows, with many instances sleeping every day). Rows stored
 * before take theirs from the spec.
 */
export const activationsByInstance = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE foundry_activations ADD COLUMN agent TEXT`
  yield* sql`ALTER TABLE foundry_activations ADD COLUMN instance_id TEXT`
  yield* sql.onDialectOrElse({
    pg: () => sql`UPDATE foundry_activations SET agent = spec::jsonb ->> 'agent', instance_id = spec::jsonb ->> 'instance'`,
    orElse: () => sql`UPDATE foundry_activations SET agent = json_extract(spec, '$.agent'), instance_id = json_extract(spec, '$.instance')`
  })
  yield* sql`CREATE INDEX foundry_activations_by_instance ON foundry_activations (kind, agent, instance_id)`
})

/** A delivery is pruned by when it was received: an index for it, as the table grows with every one. */
export const deliveriesByTime = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX foundry_deliveries_by_time ON foundry_deliveries (received_at)`
})

/**
 * When a run was last suspended or resumed, on its own row (the journal's steps keep it): adoption
 * woke a suspended run left waiting only while its `run.suspended` and `run.resumed` events were
 * kept, and retention prunes them. Suspended runs take theirs from the events still there; one whose
 * events are gone already keeps none (an executor wakes it as it starts, as before).
 */
export const runMovedAt = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE foundry_runs ADD COLUMN moved_at BIGINT`
  yield* sql`UPDATE foundry_runs SET moved_at = (SELECT MAX(e.time) FROM foundry_events e
    WHERE e.run_id = foundry_runs.id AND e.type IN ('run.suspended', 'run.resumed'))
    WHERE status = 'suspended'`
})

/**
 * The inspector's sessions: each signed in with a token, found by its secret's hash, ending at
 * `expires_at` (or sooner: signed out, or its token revoked). Kept apart from `foundry_tokens`, so a
 * session is never listed, counted or taken as a token.
 */
export const sessions = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE foundry_sessions (
    hash TEXT PRIMARY KEY,
    token_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX foundry_sessions_by_token ON foundry_sessions (token_id)`
  yield* sql`CREATE INDEX foundry_sessions_by_expiry ON foundry_sessions (expires_at)`
})
