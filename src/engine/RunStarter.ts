/**
 * How the engine starts another run (a subagent call or a spawn) without knowing who schedules
 * it: the dispatcher provides this to the runs it executes.
 */
import { Context, type Effect } from "effect"
import type { RunRecord } from "../durable/records.js"

/** A run to start on behalf of a running one. */
export interface ChildRunRequest {
  readonly agent: string
  readonly message: string
  readonly instance: string
  readonly parentRunId: string
  /** Set when the parent waits for this run's answer as the result of one of its tool calls. */
  readonly parentToolCallId?: string
  /** The parent's trace, and the span in it that started this run. */
  readonly traceId: string
  readonly parentSpanId: string
}

/** Starts runs for running runs. */
export class RunStarter extends Context.Tag("foundry/RunStarter")<RunStarter, {
  readonly start: (request: ChildRunRequest) => Effect.Effect<RunRecord, { readonly message: string }>
}>() {}
