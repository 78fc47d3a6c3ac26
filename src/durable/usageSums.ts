/**
 * What runs used (tokens, cost, turns without a price), summed over a filter of runs, in all or
 * grouped by day, agent, instance or conversation: the queries behind `Store.sumUsage` and
 * `Store.sumUsageBy`, one text for SQLite and PostgreSQL.
 */
import type { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { GroupedUsage, type UsageFilter, type UsageGrouping, UsageSums } from "./records.js"
import { failAs } from "./StoreError.js"

/** The key columns of each usage grouping, as selected (a day is the UTC midnight the run was created after, in ms). */
const usageKeys: Record<UsageGrouping, { readonly select: string; readonly positions: string }> = {
  day: { select: "(created_at / 86400000) * 86400000 AS day", positions: "1" },
  agent: { select: "agent", positions: "1" },
  instance: { select: "agent, instance_id", positions: "1, 2" },
  conversation: { select: "agent, instance_id, conversation_id", positions: "1, 2, 3" }
}

const decodeSums = Schema.decodeUnknown(Schema.Array(UsageSums))
const decodeGroups = Schema.decodeUnknown(Schema.Array(GroupedUsage))

/** The usage queries over `sql`. */
export const makeUsageSums = (sql: SqlClient.SqlClient) => {
  // Sums are cast back to BIGINT: PostgreSQL sums BIGINTs as NUMERIC, which its driver reads as text.
  const sums = sql`COUNT(*) AS runs,
    CAST(COALESCE(SUM(input_tokens), 0) AS BIGINT) AS input_tokens,
    CAST(COALESCE(SUM(output_tokens), 0) AS BIGINT) AS output_tokens,
    COALESCE(SUM(cost_usd), 0) AS cost_usd,
    CAST(COALESCE(SUM(unpriced_turns), 0) AS BIGINT) AS unpriced_turns`
  const where = (filter: UsageFilter) =>
    sql.and([
      ...(filter.agent === undefined ? [] : [sql`agent = ${filter.agent}`]),
      ...(filter.instanceId === undefined ? [] : [sql`instance_id = ${filter.instanceId}`]),
      ...(filter.conversationId === undefined ? [] : [sql`conversation_id = ${filter.conversationId}`]),
      ...(filter.since === undefined ? [] : [sql`created_at >= ${filter.since}`]),
      ...(filter.until === undefined ? [] : [sql`created_at < ${filter.until}`])
    ])

  return {
    /** The sums over the filter's runs; zeros when there are none. */
    sumUsage: (filter: UsageFilter) =>
      sql`SELECT ${sums} FROM foundry_runs WHERE ${where(filter)}`.pipe(
        Effect.flatMap(decodeSums),
        Effect.map((rows) => rows[0] ?? new UsageSums({ runs: 0, inputTokens: 0, outputTokens: 0, costUsd: 0, unpricedTurns: 0 })),
        failAs("sumUsage")
      ),

    /** The sums over the filter's runs by `groupBy`, in the order of its keys. */
    sumUsageBy: (filter: UsageFilter, groupBy: UsageGrouping) => {
      const keys = usageKeys[groupBy]
      return sql`SELECT ${sql.unsafe(keys.select)}, ${sums} FROM foundry_runs WHERE ${where(filter)}
        GROUP BY ${sql.unsafe(keys.positions)} ORDER BY ${sql.unsafe(keys.positions)}`.pipe(
        Effect.flatMap(decodeGroups),
        failAs("sumUsageBy")
      )
    }
  }
}
