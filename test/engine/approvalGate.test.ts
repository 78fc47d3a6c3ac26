/**
 * The approval gate meeting an approval it asked for before: when the run's suspension was
 * recorded, so was the request, and nothing is emitted again; when it was not (the process died,
 * or the store did not take the step, between asking and suspending), the request is recorded now,
 * so that followers and the inspector's timeline see what the run waits for.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import type { CompiledTool } from "../../src/compiler/CompiledApp.js"
import { defineTool } from "../../src/definitions/defineTool.js"
import { ApprovalStorage, layer as approvalStorage } from "../../src/durable/ApprovalStorage.js"
import type { RunStatus } from "../../src/durable/records.js"
import { runIn } from "../support/runInStatus.js"
import { approvalGate } from "../../src/engine/approvalGate.js"
import type { StepBuffer } from "../../src/engine/StepBuffer.js"
import { sqliteStore } from "../support/sqliteStore.js"

const store = () => approvalStorage.pipe(Layer.provide(sqliteStore("approval-gate").layer))

const transfer: CompiledTool = {
  id: "worker/transfer",
  name: "transfer",
  file: undefined,
  definition: defineTool({
    description: "Transfer money",
    input: Schema.Struct({ amount: Schema.Number }),
    output: Schema.String,
    approval: "always",
    run: () => Effect.succeed("transferred")
  }),
  spec: { name: "transfer", description: "Transfer money", parameters: {} }
}


/** The event types the gate puts into the run's step. */
const gateEvents = (status: RunStatus) =>
  Effect.gen(function*() {
    const emitted: Array<string> = []
    const step: StepBuffer = {
      emit: (type) => void emitted.push(type),
      deltas: () => Effect.void,
      push: () => undefined,
      message: () => undefined,
      usage: () => undefined,
      commit: () => Effect.void,
      commitSoon: () => Effect.void,
      abandon: Effect.void
    }
    const call = { id: "call_1", name: "transfer", arguments: `{"amount":5}` }
    const gate = yield* approvalGate(runIn(status), step, call, { tool: transfer, input: { amount: 5 }, rawInput: { amount: 5 } }, undefined, "10 minutes", (v) => v)
    return { gate, emitted }
  })

describe("the approval gate, meeting the approval it asked for before", () => {
  it.effect("records the request again when the run's suspension was never recorded; not when it was", () =>
    Effect.gen(function*() {
      const asked = yield* gateEvents("running")
      expect(asked.gate._tag).toBe("Wait")
      expect(asked.emitted).toEqual(["approval.requested"])
      const approvalId = asked.gate._tag === "Wait" ? asked.gate.approvalId : ""
      expect((yield* (yield* ApprovalStorage).list({ status: "pending" })).map((a) => a.id)).toEqual([approvalId])

      // The suspension was lost: executed again while running, the same approval, the request recorded.
      const lost = yield* gateEvents("running")
      expect(lost.gate).toEqual({ _tag: "Wait", approvalId })
      expect(lost.emitted).toEqual(["approval.requested"])

      // Suspended (recorded with its request), woken while still pending: nothing again.
      const woken = yield* gateEvents("suspended")
      expect(woken.gate).toEqual({ _tag: "Wait", approvalId })
      expect(woken.emitted).toEqual([])
    }).pipe(Effect.provide(store())))
})
