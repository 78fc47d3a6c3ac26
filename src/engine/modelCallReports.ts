/**
 * How a model call's retries and fallbacks are told: a `model.retry` or `model.fallback` event of
 * its turn, committed as it happens, so that a person watching a slow turn (or a slow compaction)
 * sees why. A turn's own request and its compaction's summary calls report the same way; a summary
 * call's events say `summary: true`.
 */
import { Effect } from "effect"
import type { StoreError } from "../durable/StoreError.js"
import type { EventPayload } from "../events/FoundryEvent.js"
import type { LeaseLost } from "../journal/RunJournal.js"
import type { LanguageModel, ModelError } from "../models/Model.js"
import type { StepBuffer } from "./StepBuffer.js"

/** `onRetry` and `onFallback` for a model call of turn `turn` on `span`; `summary` for a compaction's summary call. */
export const modelCallReports = (
  step: StepBuffer,
  commit: () => Effect.Effect<void, StoreError | LeaseLost>,
  span: string,
  turn: number,
  call: "turn" | "summary" = "turn"
) => {
  const report = <T extends "model.retry" | "model.fallback">(type: T, data: EventPayload<T>) =>
    Effect.suspend(() => {
      step.emit(type, span, data)
      return commit()
    })
  // Absent on a turn's own calls: their events read as they always have.
  const summary: { readonly summary?: true } = call === "summary" ? { summary: true } : {}
  return {
    onRetry: (error: ModelError) => report("model.retry", { turn, model: error.model, status: error.status ?? null, error: error.message, ...summary }),
    onFallback: (from: LanguageModel, to: LanguageModel, error: ModelError) =>
      report("model.fallback", { turn, from: from.name, to: to.name, status: error.status ?? null, error: error.message, ...summary })
  }
}
