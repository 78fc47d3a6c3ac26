import { defineEnvironment, definePureModule, defineTools, spreadsheet } from "foundry"
import lookupOrder from "../agents/support/tools/lookup-order.tool.js"

export default defineEnvironment({
  description: "The support team's workspace: notes to read, order exports to analyse, reports to hand over",
  files: {
    "/inbox/notes/refunds.md": "Refunds are issued within 5 business days of the return arriving.\n",
    "/inbox/orders.csv": "order,region,amount\n1001,north,120\n1002,south,80\n1003,north,45\n1004,west,300\n"
  },
  // Reference notes are read, never edited; work on a copy in /tmp.
  readOnlyPaths: ["/inbox/notes"],
  modules: [
    // .xlsx and .csv as rows, on the host.
    spreadsheet,
    // The SheetJS library itself, inside the sandbox, for anything the adapter does not cover.
    definePureModule({ name: "xlsx", from: "@e965/xlsx", pick: ["read", "write", "utils"] }),
    // The agent's own order lookup, callable from scripts: await lookupOrder({ orderId: "1001" }).
    defineTools({ name: "orders", tools: { lookupOrder } })
  ],
  limits: { scriptTimeoutMs: 10_000 }
})
