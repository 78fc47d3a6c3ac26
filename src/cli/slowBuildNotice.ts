/**
 * A build that takes long is said in the terminal: after a few seconds, then at longer and longer
 * intervals, how long it has gone and what it still waits for (as the build tells `BuildProgress`),
 * so that a layer that never finishes leaves no silent terminal. Nothing is failed for it: a slow
 * database may yet answer.
 */
import { Clock, Duration, Effect, Fiber, Ref } from "effect"
import { BuildProgress } from "../router/BuildProgress.js"

// Constants, not config: the build they report on may be the config's own, not loaded yet.
const firstNotice = Duration.seconds(5)
const longestBetween = Duration.minutes(1)

/** A duration as the notice says it: "5 s", "2 min 5 s". */
const elapsedText = (millis: number): string => {
  const seconds = Math.round(millis / 1000)
  return seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min${seconds % 60 === 0 ? "" : ` ${seconds % 60} s`}`
}

/**
 * Runs `build`, and while it runs says `notice(elapsed, waitingFor)` after `firstNotice`, then
 * after twice as long each time (at most `longestBetween`); `waitingFor` starts as `first`. What
 * the build says it waits for is told to `told` too, as it says it (the build status shows it).
 */
export const noticeWhileSlow = <A, E, R>(
  build: Effect.Effect<A, E, R>,
  first: string,
  notice: (elapsed: string, waitingFor: string) => Effect.Effect<void>,
  told: (waitingFor: string) => Effect.Effect<void> = () => Effect.void
): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    const waiting = yield* Ref.make(first)
    const started = yield* Clock.currentTimeMillis
    const ticking = yield* Effect.fork(Effect.gen(function*() {
      let wait = firstNotice
      while (true) {
        yield* Effect.sleep(wait)
        const now = yield* Clock.currentTimeMillis
        yield* notice(elapsedText(now - started), yield* Ref.get(waiting))
        wait = Duration.min(Duration.times(wait, 2), longestBetween)
      }
    }))
    return yield* build.pipe(
      Effect.provideService(BuildProgress, { waitingFor: (what) => Effect.zipRight(Ref.set(waiting, what), told(what)) }),
      Effect.ensuring(Fiber.interrupt(ticking))
    )
  })
