/**
 * When a schedule fires: the one calculation every timer shares (route schedules, and the ones
 * agents make for themselves).
 */
import { Cron, Duration, Either, Option, Schema } from "effect"
import type { ScheduleTiming } from "./defineSchedule.js"

/** The first firing strictly after `after`, or `null` when there is none (a past `at`). */
export const nextFireAfter = (timing: ScheduleTiming, after: number, anchor: number | null): number | null => {
  if ("cron" in timing) {
    const cron = Cron.parse(timing.cron, timing.timezone)
    return Either.isRight(cron) ? Cron.next(cron.right, new Date(after)).getTime() : null
  }
  if ("every" in timing) {
    const decoded = Duration.decodeUnknown(timing.every)
    if (Option.isNone(decoded)) return null
    const every = Duration.toMillis(decoded.value)
    const from = anchor ?? after
    return every <= 0 ? null : from + Math.max(1, Math.ceil((after - from + 1) / every)) * every
  }
  const at = Date.parse(timing.at)
  return at > after ? at : null
}


/** A schedule's timing as data (what the store keeps). */
export const ScheduleTimingSchema = Schema.Union(
  Schema.Struct({ cron: Schema.String, timezone: Schema.optional(Schema.String) }),
  Schema.Struct({ every: Schema.String }),
  Schema.Struct({ at: Schema.String })
)
