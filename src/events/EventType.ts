/**
 * The names of the events Foundry records, one literal each: what `FoundryEvent` is tagged by and
 * what `eventPayloads` gives a schema for every one of.
 */
import { Schema } from "effect"

/** Every event type Foundry records. */
export const EventType = Schema.Literal(
  "run.queued",
  "run.started",
  "run.completed",
  "run.failed",
  "run.cancelled",
  "run.suspended",
  "run.resumed",
  "approval.requested",
  "approval.decided",
  "model.turn.started",
  "model.retry",
  "model.fallback",
  "model.turn.completed",
  "model.delta",
  "tool.call.started",
  "tool.call.completed",
  "tool.call.failed",
  "delivery.received",
  "playbook.matched",
  "playbook.skipped",
  "playbook.failed",
  "instance.provisioned",
  "instance.created",
  "instance.updated",
  "instance.paused",
  "instance.resumed",
  "instance.archived",
  "instance.installed",
  "instance.uninstalled",
  "installation.skipped",
  "playbook.dispatched",
  "timer.armed",
  "context.compacting",
  "context.compacted",
  "context.uncompacted",
  "context.summary.completed",
  "budget.exceeded"
)
export type EventType = typeof EventType.Type
