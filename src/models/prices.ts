/**
 * What model turns cost: USD per million input and output tokens, by the model's name as events
 * show it (`openai:gpt-4.1-mini`). Common models have defaults; the config's `prices` adds or
 * replaces entries. A model with no price is never guessed: its turns cost nothing and are counted
 * as unpriced.
 */

/** A model's price in USD per million tokens. */
export interface ModelPrice {
  readonly input: number
  readonly output: number
}

/** Prices of common models (USD per million tokens); the offline `demo` and scripted models are free. */
export const defaultPrices: Readonly<Record<string, ModelPrice>> = {
  "openai:gpt-4.1": { input: 2.00, output: 8.00 },
  "openai:gpt-4.1-mini": { input: 0.40, output: 1.60 },
  "openai:gpt-4.1-nano": { input: 0.10, output: 0.40 },
  "openai:gpt-4o": { input: 2.50, output: 10.00 },
  "openai:gpt-4o-mini": { input: 0.15, output: 0.60 },
  "openai:o3": { input: 2.00, output: 8.00 },
  "openai:o4-mini": { input: 1.10, output: 4.40 },
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

/** What a turn's tokens cost in USD at `price`. */
export const costOf = (usage: { readonly inputTokens: number; readonly outputTokens: number }, price: ModelPrice): number =>
  (usage.inputTokens * price.input + usage.outputTokens * price.output) / 1_000_000
