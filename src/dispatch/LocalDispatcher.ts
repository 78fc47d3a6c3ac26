/**
 * The local dispatcher: every run executes in this process (see `RunExecutor`), in the order its
 * conversation's messages arrived here.
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
        recover: executor.recover,
        await: executor.awaitHere,
        cancel: (runId) => executor.cancel(runId, "cancelled: a person cancelled the run before this call finished"),
        steer: executor.steer(executor.cancel),
        decide: executor.decide
      }))
  )
