import { Schema } from "effect"
import { defineAgent } from "foundry"
import workspace from "../../environments/workspace.js"
import currentTime from "../../tools/current-time.tool.js"
import lookupOrder from "./tools/lookup-order.tool.js"
import refundOrder from "./tools/refund-order.tool.js"

export default defineAgent({
  description: "Answers customer questions about orders",
  model: "openai:gpt-4.1-mini",
  // Each customer is an instance with its own context (POST /api/instances); typed below.
  context: Schema.Struct({
    company: Schema.optionalWith(Schema.String, { default: () => "Acme" }),
    locale: Schema.optionalWith(Schema.String, { default: () => "en" })
  }),
  instructions: ({ instance }) =>
    `You help ${instance.context.company} customers with their orders (answer in locale ${instance.context.locale}). ` +
    "Look orders up before answering; never guess a status.",
  tools: [lookupOrder, refundOrder, currentTime],
  environment: workspace,
  maxTurns: 8
})
