/**
 * Which of a schedule's due firings start runs. A firing is on time within the grace after its
 * time; it is a misfire when it comes later, or when several fell due before the timer that finds
 * them began (while no server ran), and then the schedule's `misfire` policy decides. Several due
 * at once while the timer ran (it was held up: a slow store, a stalled event loop) are not
 * misfires: the latest runs, as a timer that woke late would have run it.
 */
import type { ScheduleDefinition } from "../definitions/defineSchedule.js"

/** The moments a firing is judged by. */
export interface FiringMoment {
  /** The first firing due (the schedule's next firing as stored). */
  readonly scheduled: number
  /** Every firing due by now, `scheduled` first, oldest first (at most `limit`). */
  readonly due: ReadonlyArray<number>
  readonly now: number
  /** How late a firing may be before it is a misfire. */
  readonly graceMillis: number
  /** When the timer that found them began: firings due before it fell due while no timer ran. */
  readonly timerStartedAt: number
}

/** The times to start runs for, oldest first: none, one, or (catching up) at most `limit`. */
export const firingTimes = (misfire: ScheduleDefinition["misfire"], moment: FiringMoment, limit: number): ReadonlyArray<number> => {
  const { due, graceMillis, now, scheduled, timerStartedAt } = moment
  const latest = due[due.length - 1] ?? scheduled
  const misfired = now - scheduled > graceMillis || (due.length > 1 && scheduled < timerStartedAt)
  if (!misfired) return [latest]
  return misfire === "skip" ? [] : misfire === "run-once" ? [latest] : due.slice(-limit)
}
