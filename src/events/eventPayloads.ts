/**
 * What each event type carries in its `data`: one schema per type, written from what the engine,
 * the dispatcher and the webhook trigger emit. Tool inputs and outputs are the values events may
 * show (redacted fields replaced), so they stay `Schema.Unknown`.
 */
import { Schema } from "effect"
import { RunStatus } from "../durable/records.js"
import type { EventType } from "./EventType.js"

/** Where a run came from, when something other than a client started it (all optional). */
const runLinks = {
  steeredFrom: Schema.optional(Schema.String),
  parentRunId: Schema.optional(Schema.String),
  parentToolCallId: Schema.optional(Schema.String),
  traceId: Schema.optional(Schema.String),
  parentSpanId: Schema.optional(Schema.String),
  /** What started the run when it was not a client, e.g. `{ schedule, scheduledFor }`. */
  source: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
}

/** A run beginning an execution: its input and the model it starts with (`requestedModel` when that one was replaced). */
const RunExecuting = Schema.Struct({ input: Schema.String, model: Schema.String, requestedModel: Schema.optional(Schema.String) })

/** The call a tool event belongs to. */
const call = { toolCallId: Schema.String, tool: Schema.String }

/** The capability an installation event is about. */
const capability = { kind: Schema.Literal("tool", "mcp"), capability: Schema.String }

/** The delivery a webhook's playbook event belongs to. */
const delivery = { deliveryId: Schema.String, webhook: Schema.String }

/**
 * A playbook event has two sources: a webhook delivery (the delivery in `data`, the agent and the
 * instance in the envelope) or an internal event a tool emitted (the event's name in `data`; the
 * envelope is the emitting run's).
 */
const fromDeliveryOrEvent = <D extends Schema.Struct.Fields, E extends Schema.Struct.Fields>(fromDelivery: D, fromEvent: E) =>
  Schema.Union(Schema.Struct({ ...delivery, ...fromDelivery }), Schema.Struct(fromEvent))

/**
 * A compaction step: old tool results shortened (`elide`: before the last two user messages;
 * `elide-earlier`: those the model has acted on, when a run outgrows the window itself), or older
 * turns summarized.
 */
const compactionMethod = Schema.Literal("elide", "elide-earlier", "summary")

/** Marks a model call's retry or fallback as a compaction's summary call's; absent on a turn's own calls (and on older events). */
const summaryCall = { summary: Schema.optional(Schema.Literal(true)) }

/** A model call's tokens, and their cost in USD (`null` when the model has no price). */
const turnUsage = Schema.Struct({ inputTokens: Schema.Number, outputTokens: Schema.Number, costUsd: Schema.NullOr(Schema.Number) })

/** The payload schema of every event type; a type without one does not compile. */
export const eventPayloads = {
  /**
   * `cutToolResults`: the tool results of the history a client sent (an OpenAI-compatible client's)
   * that the conversation records cut, as the engine cuts its own, whole.
   */
  "run.queued": Schema.Struct({
    input: Schema.String,
    ...runLinks,
    cutToolResults: Schema.optional(Schema.Array(Schema.Struct({ ...call, output: Schema.String })))
  }),
  "run.started": RunExecuting,
  /** The engine resuming a run, or a parent whose child ended while it was suspending. */
  "run.resumed": Schema.Union(RunExecuting, Schema.Struct({ reason: Schema.Literal("child"), childRunId: Schema.String })),
  "run.completed": Schema.Struct({ output: Schema.String, turns: Schema.Number }),
  "run.failed": Schema.Struct({ error: Schema.String }),
  /** `from`: the status the run had when it was cancelled. */
  "run.cancelled": Schema.Struct({ from: RunStatus }),
  /**
   * Waiting for a person's decision, for a child run's answer, or for a build that has the run's
   * agent (`foundry dev` serving the project without `file`, which does not build).
   */
  "run.suspended": Schema.Union(
    Schema.Struct({ reason: Schema.Literal("approval"), approvalId: Schema.String, tool: Schema.String }),
    Schema.Struct({ reason: Schema.Literal("child"), childRunId: Schema.String, tool: Schema.String }),
    Schema.Struct({ reason: Schema.Literal("budget"), approvalId: Schema.String, tool: Schema.String, budget: Schema.String }),
    Schema.Struct({ reason: Schema.Literal("build"), file: Schema.String, problem: Schema.String })
  ),
  "approval.requested": Schema.Struct({ approvalId: Schema.String, ...call, input: Schema.Unknown, expiresAt: Schema.Number }),
  /** Approved by an earlier grant for the conversation (`grantedBy`: that approval), or decided by a person or by expiry. */
  "approval.decided": Schema.Union(
    Schema.Struct({ ...call, status: Schema.Literal("approved"), grantedBy: Schema.String }),
    Schema.Struct({
      approvalId: Schema.String,
      ...call,
      status: Schema.Literal("approved", "denied", "expired"),
      scope: Schema.optional(Schema.Literal("once", "conversation")),
      reason: Schema.optional(Schema.String)
    })
  ),
  "model.turn.started": Schema.Struct({ turn: Schema.Number, model: Schema.String }),
  /** `status`: the provider's HTTP status, when there was one. */
  /** `summary: true` when the call retried is a summary call of the turn's compaction, not the turn's own request. */
  "model.retry": Schema.Struct({ turn: Schema.Number, model: Schema.String, status: Schema.NullOr(Schema.Number), error: Schema.String, ...summaryCall }),
  /** `summary: true` when the call that fell back is a summary call of the turn's compaction. */
  "model.fallback": Schema.Struct({
    turn: Schema.Number,
    from: Schema.String,
    to: Schema.String,
    status: Schema.NullOr(Schema.Number),
    error: Schema.String,
    ...summaryCall
  }),
  /** The turn's answer; tool call arguments are JSON text with redacted fields replaced. */
  "model.turn.completed": Schema.Struct({
    turn: Schema.Number,
    model: Schema.String,
    text: Schema.String,
    toolCalls: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String, arguments: Schema.String })),
    usage: turnUsage,
    durationMs: Schema.Number
  }),
  /**
   * `at`: where `text` starts in the turn's text (asked again after a retry or a fallback, a turn
   * starts again at 0), so that a follower can tell it missed some: one that started following in
   * the middle of a turn, or in another process before the executing one heard of it.
   */
  "model.delta": Schema.Struct({ turn: Schema.Number, text: Schema.String, at: Schema.Number }),
  /** `childRunId`: the run a subagent call started. */
  "tool.call.started": Schema.Struct({ ...call, input: Schema.Unknown, childRunId: Schema.optional(Schema.String) }),
  "tool.call.completed": Schema.Struct({ ...call, input: Schema.Unknown, output: Schema.Unknown, durationMs: Schema.Number }),
  /** No `input` when the call was answered without running (its run ended while it was open). */
  "tool.call.failed": Schema.Struct({ ...call, input: Schema.optional(Schema.Unknown), error: Schema.String, durationMs: Schema.Number }),
  "delivery.received": Schema.Struct({ ...delivery, eventId: Schema.NullOr(Schema.String) }),
  "playbook.matched": fromDeliveryOrEvent(
    { playbook: Schema.String },
    { event: Schema.String, playbook: Schema.String, agent: Schema.String, instanceId: Schema.String }
  ),
  /**
   * Of an emitted event: `agent` is the playbook's, `instanceId` the instance that took no run (when
   * the skip is about one); the envelope is the emitting run's. Absent from events stored before.
   */
  "playbook.skipped": fromDeliveryOrEvent(
    { playbook: Schema.String, reason: Schema.String },
    {
      event: Schema.String,
      playbook: Schema.String,
      reason: Schema.String,
      agent: Schema.optional(Schema.String),
      instanceId: Schema.optional(Schema.String)
    }
  ),
  /**
   * The playbook's own code failed on the event (`call`, e.g. `when(event)`, threw or gave what it
   * may not; `error` says which file and what): it started no run of it, and the others went on.
   */
  "playbook.failed": fromDeliveryOrEvent(
    { playbook: Schema.String, call: Schema.String, error: Schema.String },
    { event: Schema.String, playbook: Schema.String, agent: Schema.String, call: Schema.String, error: Schema.String }
  ),
  "instance.provisioned": fromDeliveryOrEvent(
    { playbook: Schema.String },
    { playbook: Schema.String, agent: Schema.String, instanceId: Schema.String }
  ),
  /** Made through the instances API (or a playbook's `create`): its key, context and what it installed. */
  "instance.created": Schema.Struct({
    provisioningKey: Schema.NullOr(Schema.String),
    context: Schema.Unknown,
    installations: Schema.Array(Schema.Struct(capability)),
    /** Who made it when not the API, e.g. `playbook:<id>`. */
    by: Schema.optional(Schema.String)
  }),
  /** Its context changed (the new one in full). */
  "instance.updated": Schema.Struct({ context: Schema.Unknown }),
  "instance.paused": Schema.Struct({ reason: Schema.NullOr(Schema.String) }),
  "instance.resumed": Schema.Struct({}),
  "instance.archived": Schema.Struct({ reason: Schema.NullOr(Schema.String) }),
  /** A capability installed or its config replaced; `config` with every secret as "<redacted>". */
  "instance.installed": Schema.Struct({ ...capability, config: Schema.Unknown }),
  "instance.uninstalled": Schema.Struct(capability),
  /**
   * An installation of the run's instance that this execution of the run leaves out, and why: its
   * capability gone from the build, a config its schema no longer takes, secrets that cannot be
   * opened, its name taken by the agent's own tool or server, a config that makes no valid server.
   */
  "installation.skipped": Schema.Struct({ ...capability, reason: Schema.String }),
  "playbook.dispatched": fromDeliveryOrEvent(
    { playbook: Schema.String, runId: Schema.String },
    { event: Schema.String, playbook: Schema.String, runId: Schema.String }
  ),
  /**
   * A timer tool's call armed one of the agent's timers (set it, or resumed it): `timerId` is its
   * id in `GET /api/schedules`, `firesAt` when it fires next (ISO). Both are absent from events
   * stored before they were recorded (which must still read).
   */
  "timer.armed": Schema.Struct({ tool: Schema.String, timerId: Schema.optional(Schema.String), firesAt: Schema.optional(Schema.String) }),
  /** A compaction step starting; `window`: the model's context window in tokens, when known. */
  "context.compacting": Schema.Struct({ method: compactionMethod, beforeTokens: Schema.Number, window: Schema.NullOr(Schema.Number) }),
  /** A compaction step that made the request smaller. */
  "context.compacted": Schema.Struct({ method: compactionMethod, beforeTokens: Schema.Number, afterTokens: Schema.Number }),
  /** A compaction step that found nothing to remove: the request is still `tokens`, for `reason`. */
  "context.uncompacted": Schema.Struct({ method: compactionMethod, tokens: Schema.Number, reason: Schema.String }),
  /**
   * One model call of a summary step (a summary asked in pieces makes several): the model that
   * answered and its `usage`, which counts in the run's usage as a turn's does.
   */
  "context.summary.completed": Schema.Struct({ model: Schema.String, usage: turnUsage, durationMs: Schema.Number }),
  /** `budget`: the budget's name (e.g. `maxTokensPerRun`); `setIn`: the file that sets it. */
  "budget.exceeded": Schema.Struct({ budget: Schema.String, limit: Schema.Number, used: Schema.Number, setIn: Schema.String })
} satisfies { readonly [Type in EventType]: Schema.Schema.AnyNoContext }

/** The `data` of an event of type `T`. */
export type EventPayload<T extends EventType> = Schema.Schema.Type<(typeof eventPayloads)[T]>
