import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

/**
 * Quotes a shipment with the carrier an instance has an account with. Installable: each customer
 * installs it with their own carrier account (POST /api/instances/<id>/installations), and only
 * their instance's runs offer it. The API key is a secret: sealed in the store, never shown.
 */
export default defineTool({
  description: "Quote shipping a parcel with the customer's carrier: days and price",
  input: Schema.Struct({ weightKg: Schema.Number, country: Schema.String }),
  output: Schema.Struct({ carrier: Schema.String, days: Schema.Number, priceEur: Schema.Number, reference: Schema.String }),
  installable: {
    config: Schema.Struct({
      carrier: Schema.Literal("dhl", "ups"),
      accountId: Schema.String,
      apiKey: Schema.Redacted(Schema.String)
    })
  },
  run: ({ country, weightKg }, { config }) =>
    Effect.sync(() => {
      const domestic = country.toUpperCase() === "DE"
      const days = (config.carrier === "ups" ? 1 : 2) + (domestic ? 0 : 3)
      const priceEur = Math.round((4.9 + weightKg * (domestic ? 1.2 : 3.5)) * 100) / 100
      // Priced here from the carrier's published table; booking the shipment would call its API
      // with `Redacted.value(config.apiKey)`.
      return { carrier: config.carrier, days, priceEur, reference: `${config.accountId}-${country.toUpperCase()}-${weightKg}` }
    })
})
