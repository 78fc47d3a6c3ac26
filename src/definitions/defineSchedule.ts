/**
 * `defineSchedule`: wake an agent instance on a timetable. The agent is an imported value, never
 * an id string. Triggering arrives with the triggers work; here a schedule is defined, validated
 * and listed.
 */
import type { AgentDefinition } from "./defineAgent.js"
import { brand, type Branded } from "./RouteKind.js"

/** When a schedule fires: exactly one of `cron`, `every` or `at`. */
export type ScheduleTiming =
  | { readonly cron: string; readonly timezone?: string }
  | { readonly every: string }
  | { readonly at: string }

/** A schedule definition. */
export interface ScheduleDefinition extends Branded<"schedule"> {
  readonly timing: ScheduleTiming
  readonly agent: AgentDefinition
  readonly instance: string
  readonly message: string
  readonly overlap: "skip" | "queue" | "allow"
  readonly misfire: "skip" | "run-once" | "catch-up"
}

/** Defines a schedule. */
export const defineSchedule = (definition: ScheduleTiming & {
  readonly agent: AgentDefinition
  readonly instance?: string
  readonly message: string
  readonly overlap?: ScheduleDefinition["overlap"]
  readonly misfire?: ScheduleDefinition["misfire"]
}): ScheduleDefinition =>
  brand("schedule", {
    timing: timingOf(definition),
    agent: definition.agent,
    instance: definition.instance ?? "default",
    message: definition.message,
    overlap: definition.overlap ?? "skip",
    misfire: definition.misfire ?? "run-once"
  })

const timingOf = (definition: ScheduleTiming): ScheduleTiming =>
  "cron" in definition
    ? definition.timezone === undefined
      ? { cron: definition.cron }
      : { cron: definition.cron, timezone: definition.timezone }
    : "every" in definition
    ? { every: definition.every }
    : { at: definition.at }
