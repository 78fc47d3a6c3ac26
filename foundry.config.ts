import { defineConfig } from "foundry"
import { OrdersLive } from "./lib/Orders.js"

export default defineConfig({
  store: { sqlite: ".foundry/foundry.db" },
  server: { port: 4141 },
  layers: [OrdersLive]
})
