/**
 * What the store keeps, as `effect/Schema` values: the same shapes the HTTP API returns.
 */
import { Schema } from "effect"

/** Where a run is in its life. */
export const RunStatus = Schema.Literal("queued", "running", "suspended", "completed", "failed", "cancelled")
export type RunStatus = typeof RunStatus.Type

/** Statuses a run never leaves. */
export const finalStatuses: ReadonlySet<RunStatus> = new Set(["completed", "failed", "cancelled"])

/** The statuses a run never leaves, as an SQL list for `status NOT IN ...`: `('completed', 'failed', 'cancelled')`. */
export const finalStatusesSql = `(${[...finalStatuses].map((status) => `'${status}'`).join(", ")})`

/** Milliseconds since the epoch, stored as an integer. */
const Millis = Schema.Number

/**
 * Whether an instance takes new runs: `active`; `paused` queues nothing until resumed; `archived`
 * takes none again and keeps its history.
 */
export const InstanceStatus = Schema.Literal("active", "paused", "archived")
export type InstanceStatus = typeof InstanceStatus.Type

/** An agent instance: data that owns conversations. */
export class InstanceRecord extends Schema.Class<InstanceRecord>("InstanceRecord")({
  id: Schema.String,
  agent: Schema.String,
  context: Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  /** An outside key the instance is found by (a customer id), unique per agent. */
  provisioningKey: Schema.NullOr(Schema.String),
  status: InstanceStatus,
  /** Why it is paused or archived, as the person who did it said. */
  statusReason: Schema.NullOr(Schema.String),
  createdAt: Millis,
  updatedAt: Millis
}) {}

/** What kinds of capability an instance installs: a shared tool, or an MCP server of the catalogue. */
export const CapabilityKind = Schema.Literal("tool", "mcp")
export type CapabilityKind = typeof CapabilityKind.Type

/** Which instance: instance ids are unique per agent. */
export interface InstanceRef {
  readonly agent: string
  readonly id: string
}

/** An installation to write: its config without secrets, and the secrets sealed. */
export interface NewInstallation {
  readonly kind: CapabilityKind
  readonly capability: string
  readonly config: unknown
  readonly secrets: string | null
}

/**
 * A capability installed on an instance, as stored: `config` without its secrets, which are
 * sealed apart in `secrets` (never decrypted for the API or events).
 */
export class InstallationRecord extends Schema.Class<InstallationRecord>("InstallationRecord")({
  agent: Schema.String,
  instanceId: Schema.String,
  kind: CapabilityKind,
  capability: Schema.String,
  config: Schema.parseJson(Schema.Unknown),
  /** The secret fields' values, sealed; `null` when the config holds none. */
  secrets: Schema.NullOr(Schema.String),
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
  /**
   * The release the run started on, and executes on until it ends (resumed after a restart too);
   * `null` for runs stored before releases were recorded: they go on the current one.
   */
  release: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
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
  decidedAt: Schema.NullOr(Millis),
  /** `conversation` when approving it approved its tool for the rest of the conversation (a grant names it). */
  scope: Schema.optionalWith(Schema.Literal("once", "conversation"), { default: () => "once" })
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
  /** Runs of instances with this id (of `agent`, when given). */
  readonly instanceId?: string | undefined
  readonly conversationId?: string | undefined
  /** The runs this run started (its subagents' and spawned runs). */
  readonly parentRunId?: string | undefined
  /** Runs listed after this one (older): the next page after a page that ended with it. */
  readonly before?: string | undefined
  readonly status?: RunStatus | undefined
  readonly limit: number
}

/** Which conversations to list, most recently active first: all, an agent's or an instance's, a page at a time. */
export interface ConversationFilter {
  readonly agent?: string | undefined
  readonly instanceId?: string | undefined
  /** Conversations listed after this one (less recently active): the next page after a page that ended with it. */
  readonly before?: { readonly updatedAt: number; readonly id: string } | undefined
  readonly limit: number
}

/** A conversation, with how many runs it has had and its latest run (`null`s without one). */
export class ConversationSummary extends Schema.Class<ConversationSummary>("ConversationSummary")({
  id: Schema.String,
  agent: Schema.String,
  instanceId: Schema.String,
  createdAt: Millis,
  updatedAt: Millis,
  runs: Schema.Number,
  lastRunId: Schema.NullOr(Schema.String),
  lastRunStatus: Schema.NullOr(RunStatus),
  lastRunCreatedAt: Schema.NullOr(Millis),
  /** What the latest run was asked. */
  lastRunInput: Schema.NullOr(Schema.String)
}) {}
