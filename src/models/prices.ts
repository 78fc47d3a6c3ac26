/**
 * What model turns cost: USD per million input (and cached input) and output tokens, by the model's name as events
 * show it (`openai:gpt-4.1-mini`). Common models have defaults; the config's `prices` adds or
 * replaces entries. A model with no price is never guessed: its turns cost nothing and are counted
 * as unpriced.
 */

/** A model's price in USD per million tokens. */
export interface ModelPrice {
  readonly input: number
  readonly output: number
  /** Input tokens served from the provider's prompt cache; without it they cost `input`. */
  readonly cached?: number
}

/**
 * Prices of common models (USD per million tokens: input, cached input, output); the offline
 * `demo` and scripted models are free. OpenAI's list prices (standard tier) from
 * https://platform.openai.com/docs/pricing as of August 2025: they change, and `prices` in the
 * config replaces any of them.
 */
export const defaultPrices: Readonly<Record<string, ModelPrice>> = {
  "openai:gpt-5": { input: 1.25, cached: 0.125, output: 10.00 },
  "openai:gpt-5-mini": { input: 0.25, cached: 0.025, output: 2.00 },
  "openai:gpt-5-nano": { input: 0.05, cached: 0.005, output: 0.40 },
  "openai:gpt-4.1": { input: 2.00, cached: 0.50, output: 8.00 },
  "openai:gpt-4.1-mini": { input: 0.40, cached: 0.10, output: 1.60 },
  "openai:gpt-4.1-nano": { input: 0.10, cached: 0.025, output: 0.40 },
  "openai:gpt-4o": { input: 2.50, cached: 1.25, output: 10.00 },
  "openai:gpt-4o-mini": { input: 0.15, cached: 0.075, output: 0.60 },
  "openai:o1": { input: 15.00, cached: 7.50, output: 60.00 },
  "openai:o1-mini": { input: 1.10, cached: 0.55, output: 4.40 },
  "openai:o3": { input: 2.00, cached: 0.50, output: 8.00 },
  "openai:o3-mini": { input: 1.10, cached: 0.55, output: 4.40 },
  "openai:o4-mini": { input: 1.10, cached: 0.275, output: 4.40 },
  demo: { input: 0, output: 0 }
}

const free: ModelPrice = { input: 0, output: 0 }

/** A snapshot's date at the end of a model's name, as OpenAI dates them (`gpt-4.1-2025-04-14`). */
const snapshotDate = /-\d{4}-\d{2}-\d{2}$/

/**
 * The price of `model`: the config's entry, else the default, else `undefined` (unpriced). A
 * dated snapshot without an entry of its own costs what its model does: OpenAI prices a snapshot
 * as the model it pins.
 */
export const priceOf = (model: string, overrides: Readonly<Record<string, ModelPrice>>): ModelPrice | undefined => {
  const undated = model.replace(snapshotDate, "")
  return overrides[model] ?? defaultPrices[model] ?? overrides[undated] ?? defaultPrices[undated] ??
    (model.startsWith("scripted:") ? free : undefined)
}

/**
 * What a turn's tokens cost in USD at `price`: its cached input tokens (part of `inputTokens`)
 * at the cached rate when the price has one, the rest of its input at the input rate.
 */
export const costOf = (
  usage: { readonly inputTokens: number; readonly outputTokens: number; readonly cachedInputTokens?: number },
  price: ModelPrice
): number => {
  const cached = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens)
  return ((usage.inputTokens - cached) * price.input + cached * (price.cached ?? price.input) + usage.outputTokens * price.output) / 1_000_000
}
