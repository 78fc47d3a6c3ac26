import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
import { Orders, Refund } from "../../../lib/Orders.js"

export default defineTool({
  description: "Refund a purchase in full to the customer; a person approves each refund first",
  input: Schema.Struct({ orderId: Schema.String }),
  output: Refund,
  requires: [Orders],
  // The run waits until someone approves or denies it (in the inspector, or POST /api/approvals/:id).
  approval: "always",
  // One refund per order, however often the call runs.
  idempotencyKey: ({ orderId }) => `refund:${orderId}`,
  run: ({ orderId }, context) => Effect.flatMap(Orders, (orders) => orders.refund(orderId, context.idempotencyKey))
})
