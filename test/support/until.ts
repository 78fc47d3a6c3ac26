/**
 * Waiting in a test for something another process or fiber does: looked at every 10 ms, in real
 * time (also under the test clock), for 5 s at most.
 */
import { Effect } from "effect"

const tick = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 10)))

/** Waits until `check` holds; the test dies saying that `what` never came. */
export const until = (what: string, check: Effect.Effect<boolean, unknown>) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 500; attempt++) {
      if (yield* check) return
      yield* tick
    }
    return yield* Effect.dieMessage(`never: ${what}`)
  })
