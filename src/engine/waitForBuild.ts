/**
 * A run whose agent the serving build leaves out (`foundry dev` serving the part of a project that
 * builds) waits for a build that has it, suspended, instead of failing for good: the file may be
 * half-saved, and the run (a decided approval, an interrupted turn) goes on once it builds again.
 * The dispatcher wakes it then (dispatch/buildWaits.ts).
 */
import { Effect } from "effect"
import type { LeftOutRoute } from "../compiler/CompiledApp.js"
import type { StepBuffer } from "./StepBuffer.js"

/** Suspends the run until a build has its agent, saying which file keeps it out and why. */
export const waitForBuild = (step: StepBuffer, leftOut: LeftOutRoute) =>
  Effect.gen(function*() {
    step.emit("run.suspended", "run", { reason: "build", file: leftOut.file, problem: leftOut.problem })
    yield* step.commit({ status: { status: "suspended" }, releaseLease: true })
    return "suspended" as const
  })
