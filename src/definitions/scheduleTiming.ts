/**
 * When a schedule fires: the one calculation every timer shares (route schedules, and the ones
 * agents make for themselves), and the check that a timing can fire at all, made with the same
 * parsing so that what validation accepts is what the timer understands.
 */
import { Cron, DateTime, Duration, Either, Option, Schema } from "effect"
import type { ScheduleTiming } from "./defineSchedule.js"

/** The first firing strictly after `after`, or `null` when there is none (a past `at`). */
export const nextFireAfter = (timing: ScheduleTiming, after: number, anchor: number | null): number | null => {
  if ("cron" in timing) {
    const cron = Cron.parse(timing.cron, timing.timezone)
    return Either.isRight(cron) ? nextCronFire(cron.right, after) : null
  }
  if ("every" in timing) {
    const every = intervalOf(timing.every)
    if (Option.isNone(every)) return null
    const millis = Duration.toMillis(every.value)
    const from = anchor ?? after
    return from + Math.max(1, Math.ceil((after - from + 1) / millis)) * millis
  }
  const at = Date.parse(timing.at)
  return at > after ? at : null
}

/** What keeps a timing from ever firing (naming the field at fault), and the fix. */
export interface TimingProblem {
  readonly problem: string
  readonly fix: string
}

/** The shortest interval of an `every` timing, as often as a six-field cron can fire. */
const shortestEvery = Duration.seconds(1)

const cronFix = `use 5 fields (minute 0-59, hour 0-23, day 1-31, month 1-12, weekday 0-7, 0 and 7 both Sunday), e.g. "0 9 * * 1-5", or 6 with seconds first`

/** Why `timing` can never fire as written, or `undefined` when it can. */
export const timingProblem = (timing: ScheduleTiming): TimingProblem | undefined => {
  if ("cron" in timing) {
    const fields = timing.cron.split(/\s+/).filter((field) => field !== "").length
    if (fields !== 5 && fields !== 6) {
      return { problem: `cron "${timing.cron}" has ${fields} field${fields === 1 ? "" : "s"}`, fix: cronFix }
    }
    if (timing.timezone !== undefined && Option.isNone(DateTime.zoneFromString(timing.timezone))) {
      return {
        problem: `timezone "${timing.timezone}" is not an IANA time zone`,
        fix: `use e.g. "Europe/Berlin" or "UTC"`
      }
    }
    const cron = Cron.parse(timing.cron, timing.timezone)
    if (Either.isLeft(cron)) {
      const at = cron.left.input === undefined ? "" : ` (at "${cron.left.input}")`
      return { problem: `cron "${timing.cron}" is not valid: ${lowerFirst(cron.left.message)}${at}`, fix: cronFix }
    }
    return nextCronFire(cron.right, 0) === null
      ? { problem: `cron "${timing.cron}" matches no date in any year`, fix: cronFix }
      : undefined
  }
  if ("every" in timing) {
    const fix = `use a positive duration such as "15 minutes" or "1 hour"`
    const decoded = Duration.decodeUnknown(timing.every)
    if (Option.isNone(decoded)) return { problem: `every "${timing.every}" is not a duration`, fix }
    const interval = intervalOf(timing.every)
    if (Option.isNone(interval)) return { problem: `every "${timing.every}" is not a positive, finite duration`, fix }
    // Each firing is a durable run: a few milliseconds apart, they would fill the store in seconds.
    return Duration.lessThan(interval.value, shortestEvery)
      ? { problem: `every "${timing.every}" is more often than once a second`, fix: `use "1 second" or more; for work that never stops, one run that loops does it` }
      : undefined
  }
  return Number.isNaN(Date.parse(timing.at))
    ? { problem: `at "${timing.at}" is not a valid date`, fix: `use an ISO instant, e.g. "2026-12-24T09:00:00Z"` }
    : undefined
}

/**
 * The first time `cron` matches after `after`, or `null` when it never does: `Cron.parse` accepts
 * days no month has (`* * 31 2 *`), and `Cron.next` throws on them.
 */
const nextCronFire = (cron: Cron.Cron, after: number): number | null =>
  Either.getOrNull(Either.try(() => Cron.next(cron, new Date(after)).getTime()))

/** The interval of an `every` timing: a duration that is positive and finite, or none. */
const intervalOf = (every: string): Option.Option<Duration.Duration> =>
  Option.filter(
    Duration.decodeUnknown(every),
    (duration) => Duration.isFinite(duration) && Duration.greaterThan(duration, Duration.zero)
  )

const lowerFirst = (text: string): string => text.charAt(0).toLowerCase() + text.slice(1)

/** A schedule's timing as data (what the store keeps). */
export const ScheduleTimingSchema = Schema.Union(
  Schema.Struct({ cron: Schema.String, timezone: Schema.optional(Schema.String) }),
  Schema.Struct({ every: Schema.String }),
  Schema.Struct({ at: Schema.String })
)
