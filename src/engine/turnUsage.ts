/**
 * What one model call adds to its run's usage: its tokens, and their cost at the model's price.
 * Every call a run pays for counts, a turn's and a summary's alike.
 */
import type { ModelPrice } from "../models/prices.js"
import { costOf, priceOf } from "../models/prices.js"
import type { TurnUsage } from "../journal/journalRecords.js"
import type { TurnResult } from "./modelTurn.js"

/** The usage of `result`, priced by `prices` (the config's) or the defaults; `costUsd` is `null` for a model with no price. */
export const turnUsage = (result: TurnResult, prices: Readonly<Record<string, ModelPrice>>): TurnUsage => {
  const price = priceOf(result.model, prices)
  return { inputTokens: result.inputTokens, outputTokens: result.outputTokens, costUsd: price === undefined ? null : costOf(result, price) }
}
