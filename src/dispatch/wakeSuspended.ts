/**
 * How a suspended run is woken once what it waited for came to pass (an approval decided, a child
 * run ended). One executing here is left to that execution: it reads what it waits for itself
 * after its suspension is written (engine/suspendOnApproval.ts, engine/childRuns.ts), and being
 * scheduled again would interrupt it (and a tool call it went on to, which would then run twice).
 * Once it ends, the run is woken if it is still suspended and waits on nothing: it let its lease go
 * before the news came (and not if it went on and suspended again on something else).
 */
import { type Context, Effect, Option, type Scope } from "effect"
import type { RunRecord } from "../durable/records.js"
import type { Store } from "../durable/Store.js"
import type { Executions } from "./executions.js"

/** Wakes suspended runs with `wake`, waiting in `scope` for an execution of the run here to end. */
export const makeWakeSuspended = (options: {
  readonly executions: Pick<Executions, "isHere" | "awaitHere">
  readonly store: Pick<Context.Tag.Service<Store>, "readyToResume">
  readonly wake: (run: RunRecord) => Effect.Effect<void>
  readonly scope: Scope.Scope
}) => {
  const { executions, scope, store, wake } = options
  // Runs waited for: one look after an execution answers every wake that came during it (a
  // cluster's sweep wakes a run waiting in a lane here once a second).
  const waitedFor = new Set<string>()
  const afterHere = (runId: string) =>
    Effect.gen(function*() {
      // No longer waited for once the execution has ended: a wake while the look below reads finds
      // the run not here (woken at once), or executing again (waited for again).
      yield* Effect.ensuring(executions.awaitHere(runId), Effect.sync(() => waitedFor.delete(runId)))
      // Still suspended, it may wait on something else by now (another approval, another child).
      const ready = yield* store.readyToResume(runId)
      if (Option.isSome(ready) && !executions.isHere(runId)) yield* wake(ready.value)
    }).pipe(Effect.catchAllCause((cause) => Effect.logWarning(`could not wake run ${runId} once its execution here ended`, cause)))
  return (run: RunRecord): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (!executions.isHere(run.id)) return wake(run)
      if (waitedFor.has(run.id)) return Effect.void
      waitedFor.add(run.id)
      return Effect.asVoid(Effect.forkIn(afterHere(run.id), scope))
    })
}
