/**
 * `/api/usage`: tokens and cost of model turns, summed over runs and grouped by UTC day, agent,
 * instance or conversation.
 */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { UsageGrouping } from "../../../durable/records.js"
import { UsageView } from "./views.js"

const Millis = Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative())

/** Which runs to sum, and how to group them. */
export const UsageQuery = Schema.Struct({
  agent: Schema.optional(Schema.String),
  instance: Schema.optional(Schema.String),
  conversation: Schema.optional(Schema.String),
  since: Schema.optional(Millis).annotations({ description: "runs created at or after this time, in ms since the epoch" }),
  until: Schema.optional(Millis).annotations({ description: "runs created before this time, in ms since the epoch" }),
  groupBy: Schema.optional(UsageGrouping).annotations({ description: "how rows are grouped; `day` (UTC, by run creation) when absent" })
})

/** One group's sums; the keys present are the grouping's (`day` as `YYYY-MM-DD`, UTC). */
export const UsageRow = Schema.Struct({
  ...UsageView.fields,
  runs: Schema.Number,
  day: Schema.optional(Schema.String),
  agent: Schema.optional(Schema.String),
  instanceId: Schema.optional(Schema.String),
  conversationId: Schema.optional(Schema.String)
})
export type UsageRow = typeof UsageRow.Type

/** The answer to `GET /api/usage`: a row per group, in key order, and the total over them all. */
export const UsageReport = Schema.Struct({
  groupBy: UsageGrouping,
  rows: Schema.Array(UsageRow),
  total: Schema.Struct({ ...UsageView.fields, runs: Schema.Number })
})
export type UsageReport = typeof UsageReport.Type

/** The usage group. */
export class UsageGroup extends HttpApiGroup.make("usage").add(
  HttpApiEndpoint.get("sum", "/api/usage").setUrlParams(UsageQuery).addSuccess(UsageReport)
) {}
