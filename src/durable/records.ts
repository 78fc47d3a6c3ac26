/**
 * What the store keeps, as `effect/Schema` values: the same shapes the HTTP API returns.
 */
import { Schema } from "effect"

/** Where a run is in its life. */
export const RunStatus = Schema.Literal("queued", "running", "suspended", "completed", "failed", "cancelled")
export type RunStatus = typeof RunStatus.Type

/** Statuses a run never leaves. */
export const finalStatuses: ReadonlySet<RunStatus> = new Set(["completed", "failed", "cancelled"])

/** Milliseconds since the epoch, stored as an integer. */
const Millis = Schema.Number

/** An agent instance: data that owns conversations. */
export class InstanceRecord extends Schema.Class<InstanceRecord>("InstanceRecord")({
  id: Schema.String,
  agent: Schema.String,
  context: Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  createdAt: Millis,
  updatedAt: Millis
}) {}

/** A conversation of one instance. */
export class ConversationRecord extends Schema.Class<ConversationRecord>("ConversationRecord")({
  id: Schema.String,
  agent: Schema.String,
  instanceId: Schema.String,
  createdAt: Millis,
  updatedAt: Millis
}) {}

/** One processing of one inbound message. */
export class RunRecord extends Schema.Class<RunRecord>("RunRecord")({
  id: Schema.String,
  agent: Schema.String,
  instanceId: Schema.String,
  conversationId: Schema.String,
  status: RunStatus,
  input: Schema.String,
  output: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String),
  createdAt: Millis,
  startedAt: Schema.NullOr(Millis),
  finishedAt: Schema.NullOr(Millis),
  /** The run this one replaced when it was steered. */
  steeredFrom: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  /** The run that started this one (a subagent call or a spawn). */
  parentRunId: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  /** The parent's tool call this run answers, when the parent waits for it. */
  parentToolCallId: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  /** The trace the run belongs to: its own, or the run that started it. */
  traceId: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  /** The span in the parent's trace that the run hangs under. */
  parentSpanId: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  /** What started the run when it was not a message from a client, e.g. a schedule and its time. */
  source: Schema.optionalWith(Schema.NullOr(Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.Unknown }))), {
    default: () => null
  }),
  /** Input tokens of the run's model turns, summed. */
  inputTokens: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  /** Output tokens of the run's model turns, summed. */
  outputTokens: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  /** What the run's priced model turns cost, in USD. */
  costUsd: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  /** Model turns on a model with no price: their tokens are counted, their cost is not known. */
  unpricedTurns: Schema.optionalWith(Schema.Number, { default: () => 0 })
}) {}

/** Where an approval is in its life; `expired` counts as denied. */
export const ApprovalStatus = Schema.Literal("pending", "approved", "denied", "expired")
export type ApprovalStatus = typeof ApprovalStatus.Type

/** A person's decision about one tool call, asked for by the tool's `approval` policy. */
export class ApprovalRecord extends Schema.Class<ApprovalRecord>("ApprovalRecord")({
  id: Schema.String,
  runId: Schema.String,
  toolCallId: Schema.String,
  agent: Schema.String,
  tool: Schema.String,
  input: Schema.parseJson(Schema.Unknown),
  status: ApprovalStatus,
  reason: Schema.NullOr(Schema.String),
  createdAt: Millis,
  expiresAt: Millis,
  decidedAt: Schema.NullOr(Millis)
}) {}

/**
 * A tool approved for a whole conversation: a person approved one call with scope
 * `"conversation"` (`approvalId`), so later calls of `tool` there run without asking.
 */
export class GrantRecord extends Schema.Class<GrantRecord>("GrantRecord")({
  conversationId: Schema.String,
  agent: Schema.String,
  tool: Schema.String,
  approvalId: Schema.String,
  createdAt: Millis
}) {}

/** Token and cost sums over runs, and how many runs they cover. */
export class UsageSums extends Schema.Class<UsageSums>("UsageSums")({
  runs: Schema.Number,
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  costUsd: Schema.Number,
  unpricedTurns: Schema.Number
}) {}

/** How usage sums are grouped: by UTC day of the run's creation, agent, instance or conversation. */
export const UsageGrouping = Schema.Literal("day", "agent", "instance", "conversation")
export type UsageGrouping = typeof UsageGrouping.Type

/** One group of usage sums; the keys present are the grouping's (`day` is the UTC midnight, in ms). */
export class GroupedUsage extends Schema.Class<GroupedUsage>("GroupedUsage")({
  ...UsageSums.fields,
  day: Schema.optional(Schema.Number),
  agent: Schema.optional(Schema.String),
  instanceId: Schema.optional(Schema.String),
  conversationId: Schema.optional(Schema.String)
}) {}

/** Which runs' usage to sum: `since` inclusive and `until` exclusive, on the run's creation time (ms). */
export interface UsageFilter {
  readonly agent?: string | undefined
  readonly instanceId?: string | undefined
  readonly conversationId?: string | undefined
  readonly since?: number | undefined
  readonly until?: number | undefined
}

/** Filters for listing runs, newest first. */
export interface RunFilter {
  readonly agent?: string | undefined
  readonly status?: RunStatus | undefined
  readonly limit: number
}
