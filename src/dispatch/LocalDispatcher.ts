/**
 * The local dispatcher: every run executes in this process (see `RunExecutor`), in the order its
 * conversation's messages arrived here. A server that recovered at its start goes on taking up the
 * runs of other processes on its store that stop mid-run, and waking the suspended runs they leave.
 */
import { Effect, Layer } from "effect"
import { Dispatcher } from "./Dispatcher.js"
import { makeRunExecutor, type RunExecutorOptions } from "./RunExecutor.js"

/** Settings of the local dispatcher. */
export type LocalDispatcherOptions = Omit<RunExecutorOptions, "wake">

/** The local dispatcher. */
export const layer = (options: LocalDispatcherOptions) =>
  Layer.scoped(
    Dispatcher,
    Effect.map(makeRunExecutor(options), (executor) =>
      Dispatcher.of({
        submit: executor.submit,
        // After the start's recovery, runs of a process on the store that stops are taken up here.
        recover: Effect.tap(executor.recover, () => executor.keepAdopting),
        await: executor.awaitHere,
        cancel: (runId) => executor.cancel(runId, "cancelled: a person cancelled the run before this call finished"),
        steer: executor.steer(executor.cancel),
        decide: executor.decide
      }))
  )
