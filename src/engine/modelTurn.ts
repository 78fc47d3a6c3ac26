/**
 * One model turn: the model's stream folded into text and tool calls, text deltas forwarded as
 * they arrive, transient failures retried with exponential backoff and jitter.
 */
import { Duration, Effect, Schedule, Stream } from "effect"
import { type LanguageModel, ModelError, type ModelRequest, type ToolCall } from "../models/Model.js"

/** What one model turn produced. */
export interface TurnResult {
  readonly text: string
  readonly toolCalls: ReadonlyArray<ToolCall>
  readonly inputTokens: number
  readonly outputTokens: number
}

/** How transient model failures are retried. */
export interface RetryPolicy {
  readonly times: number
  readonly base: Duration.DurationInput
  readonly max: Duration.DurationInput
}

const emptyTurn: TurnResult = { text: "", toolCalls: [], inputTokens: 0, outputTokens: 0 }

const retrySchedule = (policy: RetryPolicy) =>
  Schedule.exponential(policy.base).pipe(
    Schedule.jittered,
    Schedule.modifyDelay((delay) => Duration.min(delay, Duration.decode(policy.max))),
    Schedule.intersect(Schedule.recurs(policy.times))
  )

/** Streams one model turn, forwarding text deltas, and collects what it produced. */
export const modelTurn = (
  model: LanguageModel,
  request: ModelRequest,
  options: {
    readonly retry: RetryPolicy
    readonly onDelta: (text: string) => Effect.Effect<unknown, unknown>
    readonly onRetry: (error: ModelError) => Effect.Effect<unknown, unknown>
  }
): Effect.Effect<TurnResult, ModelError> =>
  // Suspended, so that every retry asks the model again, whatever the adapter does eagerly.
  Stream.suspend(() => model.stream(request)).pipe(
    Stream.runFoldEffect(emptyTurn, (acc, chunk): Effect.Effect<TurnResult> => {
      switch (chunk._tag) {
        case "TextDelta":
          return Effect.as(Effect.ignore(options.onDelta(chunk.text)), { ...acc, text: acc.text + chunk.text })
        case "ToolCall":
          return Effect.succeed({ ...acc, toolCalls: [...acc.toolCalls, chunk.call] })
        case "Usage":
          return Effect.succeed({ ...acc, inputTokens: chunk.inputTokens, outputTokens: chunk.outputTokens })
      }
    }),
    Effect.catchAllDefect((defect) =>
      Effect.fail(
        new ModelError({
          model: model.name,
          kind: "permanent",
          message: `the model adapter crashed: ${defect instanceof Error ? defect.message : String(defect)}`
        })
      )
    ),
    Effect.tapError((error) => error.kind === "transient" ? Effect.ignore(options.onRetry(error)) : Effect.void),
    Effect.retry({ schedule: retrySchedule(options.retry), while: (error) => error.kind === "transient" })
  )
