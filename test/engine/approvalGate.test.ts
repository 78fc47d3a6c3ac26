/**
 * The approval gate asking for an approval: it hands it to the run's step (stored with the step
 * that suspends the run, under its lease), storing nothing itself. Meeting one it asked for
 * before: when the run's suspension was recorded, so was the request, and nothing is emitted
 * again; found pending while the run is not suspended (stored before its step by an earlier
 * version, the process dying between the two), the request is recorded now, so that followers and
 * the inspector's timeline see what the run waits for.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import type { CompiledTool } from "../../src/compiler/CompiledApp.js"
import { defineTool } from "../../src/definitions/defineTool.js"
import { ApprovalStorage, layer as approvalStorage } from "../../src/durable/ApprovalStorage.js"
import type { NewApproval } from "../../src/journal/journalRecords.js"
import { Database } from "../../src/durable/Database.js"
import type { RunStatus } from "../../src/durable/records.js"
import { runIn } from "../support/runInStatus.js"
import { approvalGate } from "../../src/engine/approvalGate.js"
import type { StepBuffer } from "../../src/engine/StepBuffer.js"
import { askApproval } from "../../src/journal/journalStatements.js"
import { sqliteStore } from "../support/sqliteStore.js"

const store = () => approvalStorage.pipe(Layer.provideMerge(sqliteStore("approval-gate").layer))

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


/** The event types the gate puts into the run's step, and the approvals it asks the step to store. */
const gateEvents = (status: RunStatus) =>
  Effect.gen(function*() {
    const emitted: Array<string> = []
    const asked: Array<NewApproval> = []
    const step: StepBuffer = {
      emit: (type) => void emitted.push(type),
      deltas: () => Effect.void,
      push: () => undefined,
      message: () => undefined,
      usage: () => undefined,
      ask: (approval) => void asked.push(approval),
      timer: () => undefined,
      commit: () => Effect.void,
      commitSoon: () => Effect.void,
      settle: Effect.void,
      abandon: Effect.void
    }
    const call = { id: "call_1", name: "transfer", arguments: `{"amount":5}` }
    const gate = yield* approvalGate(runIn(status), step, call, { tool: transfer, input: { amount: 5 }, rawInput: { amount: 5 } }, undefined, "10 minutes", (v) => v)
    return { gate, emitted, asked }
  })

/** Stores `approval` as the step that suspends the run does. */
const stored = (approval: NewApproval) => Effect.flatMap(Database, (database) => database.write({ statements: [askApproval(approval, 1)] }))

describe("the approval gate, asking and meeting the approval it asked for before", () => {
  it.effect("hands the approval to the run's step, storing nothing itself; records the request again when the run's suspension was never recorded; not when it was", () =>
    Effect.gen(function*() {
      const first = yield* gateEvents("running")
      expect(first.gate._tag).toBe("Wait")
      expect(first.emitted).toEqual(["approval.requested"])
      const approvalId = first.gate._tag === "Wait" ? first.gate.approvalId : ""
      expect(first.asked).toEqual([expect.objectContaining({ id: approvalId, runId: "run_1", toolCallId: "call_1", tool: "transfer", input: { amount: 5 } })])
      // The step stores it (a step the lease fenced off never does): the gate did not.
      const approvals = yield* ApprovalStorage
      expect(yield* approvals.list({ status: "pending" })).toEqual([])
      yield* stored(first.asked[0]!)
      expect((yield* approvals.list({ status: "pending" })).map((a) => a.id)).toEqual([approvalId])

      // Stored pending, the run not suspended (an earlier version stored an approval before its
      // step, and the step was lost): the same approval, not asked again, the request recorded.
      const lost = yield* gateEvents("running")
      expect(lost.gate).toEqual({ _tag: "Wait", approvalId })
      expect(lost.asked).toEqual([])
      expect(lost.emitted).toEqual(["approval.requested"])

      // Suspended (recorded with its request), woken while still pending: nothing again.
      const woken = yield* gateEvents("suspended")
      expect(woken.gate).toEqual({ _tag: "Wait", approvalId })
      expect(woken.asked).toEqual([])
      expect(woken.emitted).toEqual([])
    }).pipe(Effect.provide(store())))
})
