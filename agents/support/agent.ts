import { defineAgent } from "foundry"
import workspace from "../../environments/workspace.js"
import currentTime from "../../tools/current-time.tool.js"
import lookupOrder from "./tools/lookup-order.tool.js"

export default defineAgent({
  description: "Answers customer questions about orders",
  model: "openai:gpt-4.1-mini",
  instructions: ({ instance }) =>
    `You help ${String(instance.context.company ?? "Acme")} customers with their orders. ` +
    "Look orders up before answering; never guess a status.",
  tools: [lookupOrder, currentTime],
  environment: workspace,
  maxTurns: 8
})
