/**
 * The store's schema, as ordered migrations. Written in the SQL that SQLite and PostgreSQL share;
 * where they differ, `onDialectOrElse` picks.
 */
import { Migrator } from "@effect/sql"
import { Effect } from "effect"
import { startupContention } from "./Database.js"
import { activationsByInstance, conversationsByActivity, deliveriesByTime, deploymentLog, environments, grantsByApproval, idempotencyFingerprint, instanceLifecycle, lighterEvents, releases, runMovedAt, runOrder, runsInFlightByConversation, sessions, sparseRunIndexes } from "./schemaChanges.js"
import { activations, childRuns, deliveries, durableExecution, grants, init, prefixedTables, runUsage, tokens, traces } from "./schemaTables.js"
import { failAs } from "./StoreError.js"

/** Migrations by `<number>_<name>`, as `Migrator.fromRecord` reads them. */
export const migrations = {
  "0001_init": init,
  "0002_durable_execution": durableExecution,
  "0003_child_runs": childRuns,
  "0004_traces": traces,
  "0005_deliveries": deliveries,
  "0006_activations": activations,
  "0007_run_usage": runUsage,
  "0008_grants": grants,
  "0009_prefixed_tables": prefixedTables,
  "0010_tokens": tokens,
  "0011_idempotency_fingerprint": idempotencyFingerprint,
  "0012_run_order": runOrder,
  "0013_instance_lifecycle": instanceLifecycle,
  "0014_releases": releases,
  "0015_environments": environments,
  "0016_lighter_events": lighterEvents,
  "0017_deployment_log": deploymentLog,
  "0018_grants_by_approval": grantsByApproval,
  "0019_conversations_by_activity": conversationsByActivity,
  "0020_runs_in_flight_by_conversation": runsInFlightByConversation,
  "0021_sparse_run_indexes": sparseRunIndexes,
  "0022_activations_by_instance": activationsByInstance,
  "0023_deliveries_by_time": deliveriesByTime,
  "0024_run_moved_at": runMovedAt,
  "0025_sessions": sessions
}

/**
 * Brings the database's schema up to date. Two processes starting on one fresh database race to
 * migrate it: the loser's statements fail while the winner changes the schema, and a retry finds
 * the migrations done.
 */
export const migrate = Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: "foundry_migrations" }).pipe(
  Effect.retry({ schedule: startupContention }),
  failAs("migrate"),
  Effect.asVoid
)
