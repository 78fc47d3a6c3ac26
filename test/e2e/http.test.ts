import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { http, startServer, waitForRun } from "../support/server.js"

const root = new URL("../../", import.meta.url).pathname

describe("the example project over HTTP", () => {
  it.scoped("a run of the support agent completes with the demo model and records the tool call", () =>
    Effect.gen(function*() {
      const server = yield* startServer(root)
      const created = yield* http(`${server.url}/api/runs`, { body: { agent: "support", message: "Where is order 42?" } })
      expect(created.status).toBe(202)
      const { runId } = created.json as { runId: string }
      const run = yield* waitForRun(server.url, runId)
      expect(run).toMatchObject({ status: "completed", agent: "support", instanceId: "default" })
      const events = yield* http(`${server.url}/api/runs/${runId}/events`)
      const toolCall = (events.json as Array<{ type: string; data: Record<string, unknown> }>).find((e) => e.type === "tool.call.completed")
      expect(toolCall?.data).toMatchObject({ tool: "lookup-order", input: { orderId: "42" }, output: { orderId: "42", status: "shipped" } })
    }))
})
