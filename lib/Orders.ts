/**
 * The example project's order system: a service that the `lookup-order` tool requires and
 * `foundry.config.ts` provides (here in memory; in a real project, a database or an API).
 */
import { Context, Effect, Layer, Schema } from "effect"

/** An order's state. */
export const OrderStatus = Schema.Struct({
  orderId: Schema.String,
  status: Schema.Literal("processing", "shipped", "delivered"),
  eta: Schema.String
})
export type OrderStatus = typeof OrderStatus.Type

/** No order has that id. */
export class OrderNotFound extends Schema.TaggedError<OrderNotFound>()("OrderNotFound", {
  orderId: Schema.String,
  message: Schema.String
}) {}

/** A refund made. */
export const Refund = Schema.Struct({ refundId: Schema.String, orderId: Schema.String })
export type Refund = typeof Refund.Type

/** The order system. */
export class Orders extends Context.Tag("Orders")<Orders, {
  readonly status: (orderId: string) => Effect.Effect<OrderStatus, OrderNotFound>
  /** Refunds an order in full; the same `key` refunds it once however often it is asked. */
  readonly refund: (orderId: string, key: string) => Effect.Effect<Refund, OrderNotFound>
}>() {}

const sample: ReadonlyArray<OrderStatus> = [
  { orderId: "42", status: "shipped", eta: "2026-12-03" },
  { orderId: "1001", status: "processing", eta: "2026-12-08" },
  { orderId: "7", status: "delivered", eta: "2026-11-20" }
]

const find = (orderId: string): Effect.Effect<OrderStatus, OrderNotFound> => {
  const found = sample.find((order) => order.orderId === orderId)
  return found === undefined
    ? Effect.fail(new OrderNotFound({ orderId, message: `no order ${orderId}; try 42, 1001 or 7` }))
    : Effect.succeed(found)
}

/** Orders kept in memory, with a few sample orders. */
export const OrdersLive = Layer.sync(Orders, () => {
  const refunds = new Map<string, Refund>()
  return {
    status: find,
    refund: (orderId, key) =>
      Effect.map(find(orderId), () => {
        const made = refunds.get(key) ?? { refundId: `rf_${orderId}_${refunds.size + 1}`, orderId }
        refunds.set(key, made)
        return made
      })
  }
})
