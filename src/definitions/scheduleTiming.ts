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
    return nextCronFire(timing.cron, timing.timezone, after)
  }
  if ("every" in timing) {
    const every = intervalOf(timing.every)
    if (Option.isNone(every)) return null
    const millis = Duration.toMillis(every.value)
    const from = anchor ?? after
    // In whole milliseconds, as the store keeps times (an interval may have a fraction of one).
    return Math.ceil(from + Math.max(1, Math.ceil((after - from + 1) / millis)) * millis)
  }
  const at = Date.parse(timing.at)
  return at > after ? at : null
}

/**
 * The last `count` (at most) of the firings from `first` to `now`, `first` included, oldest first.
 * Walked from a little before `now`, and from further back only while that finds fewer: a long
 * outage under a frequent timing (every second, for days) is not walked through whole.
 */
export const latestFirings = (timing: ScheduleTiming, first: number, now: number, count: number): ReadonlyArray<number> => {
  for (let span = 60_000; ; span *= 16) {
    const from = Math.max(first, now - span)
    const found: Array<number> = from === first ? [first] : []
    for (let t = nextFireAfter(timing, from === first ? first : from - 1, first); t !== null && t <= now; t = nextFireAfter(timing, t, first)) {
      found.push(t)
      if (found.length > count) found.shift()
    }
    if (found.length >= count || from === first) return found
  }
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
    return nextCronFire(timing.cron, timing.timezone, 0) === null
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
 * The first time the cron `expression` in `timezone` matches after `after`, or `null` when it
 * never does (or does not parse).
 *
 * `Cron.next` reads a wall time that the autumn change to standard time repeats as its first
 * instant only: it skips the repeated hour, and from inside it answers a time before `after`.
 * As in Vixie cron and cronie, a cron that fires every hour (`everyHour`) fires through the
 * repeated hour as through any other; one at fixed hours fires once, at the first instant. A
 * time the spring change skips is moved on by the gap (`30 2 * * *` fires at 03:30), as
 * `Cron.next` does.
 */
const nextCronFire = (expression: string, timezone: string | undefined, after: number): number | null => {
  const parsed = Cron.parse(expression, timezone)
  if (Either.isLeft(parsed)) return null
  const cron = parsed.right
  const everyHour = firesEveryHour(expression)
  const plain = cronNext(cron, after)
  if (plain === null) return null
  if (plain > after && !everyHour) return plain
  const zone = Option.getOrElse(cron.tz, DateTime.zoneMakeLocal)
  const found = plain > after ? [plain] : []
  for (const repeat of repeatedSpans(zone, after - Duration.toMillis(Duration.days(1)), Math.max(plain, after))) {
    if (repeat.end <= after) continue
    // Past the repeated span wall times are unambiguous again, and `Cron.next` is right.
    if (repeat.start <= after) found.push(...nullable(cronNext(cron, repeat.end - 1)))
    if (!everyHour) continue
    // Inside it, the wall time is the standard offset's: a cron at that fixed offset reads it.
    const atOffset = Cron.parse(expression, DateTime.zoneMakeOffset(repeat.offset))
    const again = Either.isRight(atOffset) ? cronNext(atOffset.right, Math.max(after, repeat.start - 1)) : null
    if (again !== null && again > after && again < repeat.end) found.push(again)
  }
  return found.length === 0 ? null : Math.min(...found)
}

/** `Cron.next` as a number; `null` on the days no month has (`* * 31 2 *`), which `Cron.parse` accepts and `Cron.next` throws on. */
const cronNext = (cron: Cron.Cron, after: number): number | null =>
  Either.getOrNull(Either.try(() => Cron.next(cron, new Date(after)).getTime()))

const nullable = (value: number | null): ReadonlyArray<number> => value === null ? [] : [value]

/**
 * Whether a cron fires every hour, so also in an hour that is repeated: as Vixie cron decides it,
 * its minute or hour field (or seconds field, with six) starts with `*`: every value, or a step
 * over them.
 */
const firesEveryHour = (expression: string): boolean => {
  const fields = expression.split(/\s+/).filter((field) => field !== "")
  return fields.slice(0, fields.length === 6 ? 3 : 2).some((field) => field.startsWith("*"))
}

/** A span of instants whose wall times the zone showed once already, just before it (`offset`: the zone's offset during it, in milliseconds). */
interface RepeatedSpan {
  readonly start: number
  readonly end: number
  readonly offset: number
}

/** The spans in which `zone` repeats wall times (its changes back to standard time) that start between `from` and `to`. */
const repeatedSpans = (zone: DateTime.TimeZone, from: number, to: number): ReadonlyArray<RepeatedSpan> => {
  const offsetAt = (at: number) => DateTime.zonedOffset(DateTime.unsafeMakeZoned(at, { timeZone: zone }))
  const step = Duration.toMillis(Duration.days(1))
  const spans: Array<RepeatedSpan> = []
  for (let start = from; start < to; start += step) {
    const end = Math.min(start + step, to)
    const before = offsetAt(start)
    if (offsetAt(end) >= before) continue
    // The change is the first instant with the smaller offset: halve the day down to it.
    let low = start
    let high = end
    while (high - low > 1) {
      const middle = Math.floor((low + high) / 2)
      if (offsetAt(middle) < before) high = middle
      else low = middle
    }
    const offset = offsetAt(high)
    spans.push({ start: high, end: high + before - offset, offset })
  }
  return spans
}

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
