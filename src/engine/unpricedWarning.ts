/**
 * The warning that a run's model has no price while a cost budget is set: its turns add nothing to
 * the run's cost, so the budget never trips on them, and nothing else says so.
 */
import { Effect } from "effect"
import type { ModelPrice } from "../models/prices.js"
import { priceOf } from "../models/prices.js"
import type { BudgetName } from "./budgets.js"

/** The model names already warned of in this process: once each, not at every run. */
const warned = new Set<string>()

/**
 * Warns once per model name, of `models` that have no price (config's `prices`, then the known
 * ones), when `budgets` (cost budgets in force) is not empty.
 */
export const warnUnpriced = (
  models: ReadonlyArray<string>,
  budgets: ReadonlyArray<BudgetName>,
  prices: Readonly<Record<string, ModelPrice>>,
  configFile: string
): Effect.Effect<void> => {
  if (budgets.length === 0) return Effect.void
  const unpriced = models.filter((model) => !warned.has(model) && priceOf(model, prices) === undefined)
  return Effect.forEach(unpriced, (model) => {
    warned.add(model)
    return Effect.logWarning(
      `model ${model} has no price: its turns cost nothing in usage, so ${budgets.join(" and ")} cannot count them; ` +
        `give it one in ${configFile} prices, e.g. prices: { "${model}": { input: 1.25, output: 10, cached: 0.125 } } (USD per million tokens)`
    )
  }, { discard: true })
}
