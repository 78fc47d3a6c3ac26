/**
 * How a run's execution ends, and ending one as failed.
 */
import { Clock, Effect } from "effect"
import type { RunRecord } from "../durable/records.js"
import { closeOpenCalls } from "./closeOpenCalls.js"
import type { StepBuffer } from "./StepBuffer.js"
import type { JournalEntry } from "./transcript.js"

/** How a run's execution ended (a suspended run continues later). */
export type RunOutcome = "completed" | "failed" | "suspended"

/** Ends the run as failed: its open calls answered, its status and `run.failed` in the step that ends it. */
export const failRun = (run: RunRecord, step: StepBuffer, journal: ReadonlyArray<JournalEntry>, error: string) =>
  Effect.gen(function*() {
    // Such a call may have run: what is known is that its result was never recorded.
    const closing = closeOpenCalls(run, journal, `no result: the run failed before this call's result was recorded (${error})`, yield* Clock.currentTimeMillis)
    for (const message of closing.messages) step.message(message)
    for (const event of closing.events) step.push(event)
    step.emit("run.failed", "run", { error })
    yield* step.commit({ status: { status: "failed", error }, releaseLease: true })
    return "failed" as const
  })
