import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
import { Orders, OrderStatus } from "../../../lib/Orders.js"

export default defineTool({
  description: "Look up an order's shipping status by its order id",
  input: Schema.Struct({ orderId: Schema.String }),
  output: OrderStatus,
  requires: [Orders],
  run: ({ orderId }) => Effect.flatMap(Orders, (orders) => orders.status(orderId))
})
