/**
 * Retention of the event log: old events go by age and by count, checked on an interval for as
 * long as the log's scope is open; a failed prune is logged and tried again at the next check.
 */
import { Clock, Duration, Effect, Schedule, type Scope } from "effect"
import type { EventStorage } from "./EventStorage.js"

/** How events are pruned: none unless `retention` sets an age or a count. */
export interface RetentionOptions {
  readonly retention?: { readonly maxAge?: Duration.DurationInput; readonly maxCount?: number } | undefined
  readonly pruneEvery?: Duration.DurationInput | undefined
}

/** Prunes `storage` as `options` say, every `pruneEvery` (10 minutes unless set), in the background of the scope. */
export const pruneOnSchedule = (storage: EventStorage["Type"], options: RetentionOptions): Effect.Effect<void, never, Scope.Scope> => {
  const retention = options.retention
  if (retention?.maxAge === undefined && retention?.maxCount === undefined) return Effect.void
  return Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    yield* storage.prune({
      olderThan: retention.maxAge === undefined ? undefined : now - Duration.toMillis(Duration.decode(retention.maxAge)),
      keepLatest: retention.maxCount
    })
  }).pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("event retention failed", cause)),
    Effect.repeat(Schedule.spaced(options.pruneEvery ?? "10 minutes")),
    Effect.forkScoped,
    Effect.asVoid
  )
}
