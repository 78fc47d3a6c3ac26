/**
 * A run suspending on an approval while a person decides it (SQLite on a temporary file, the real
 * journal and approval storage): a decision stored before the suspension is, whose decider read
 * the run as running and left it, is found by the run itself, which goes on at once with its lease
 * and without a word of the suspension; one still pending leaves the run suspended, its
 * `run.suspended` stored with its lease let go (the request with the status, before the read). And the decider's side: a run
 * that was running as the decider first read it and is suspended by the time the decision is
 * stored is resumed.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option, TestClock } from "effect"
import { makeApprovalDecisions } from "../../src/dispatch/approvalDecisions.js"
import * as ApprovalStorage from "../../src/durable/ApprovalStorage.js"
import type { RunRecord } from "../../src/durable/records.js"
import { Store } from "../../src/durable/Store.js"
import { makeStepBuffer } from "../../src/engine/StepBuffer.js"
import { suspendOnApproval } from "../../src/engine/suspendOnApproval.js"
import { EventStorage } from "../../src/events/EventStorage.js"
import { RunJournal } from "../../src/journal/RunJournal.js"
import { sqlite, storageLayer } from "../journal/backends.js"
import { draft, newRun, submit } from "../journal/fixtures.js"

/** A submitted run, claimed by `executor`, with the storages around it and an approval asked for one of its calls. */
const runAsking = Effect.gen(function*() {
  yield* TestClock.setTime(1_000)
  const place = yield* sqlite.fresh
  const context = yield* Layer.build(ApprovalStorage.layer.pipe(Layer.provideMerge(storageLayer(place))))
  const journal = Context.get(context, RunJournal)
  const approvals = Context.get(context, ApprovalStorage.ApprovalStorage)
  const run = yield* submit(journal, newRun("r1"))
  const claimed = yield* journal.claim(run, "executor", 60_000)
  if (claimed._tag !== "Claimed") return yield* Effect.dieMessage("the lease is held")
  // Stored by a step under the lease, as the run's gate hands it to its step.
  const approval = { id: "apr_1", runId: run.id, toolCallId: "call_1", agent: run.agent, tool: "pay", input: {}, expiresAt: 9e15 }
  yield* journal.record(run, { status: { status: "running" }, approvals: [approval] }, claimed.lease)
  const asked = Option.getOrThrow(yield* approvals.get(approval.id))
  const step = yield* makeStepBuffer(run, claimed.lease).pipe(Effect.provide(context))
  const statusOf = Effect.map(Context.get(context, Store).getRun(run.id), (found) => Option.getOrThrow(found).status)
  const eventTypes = Effect.map(Context.get(context, EventStorage).list({ runId: run.id }), (events) => events.map((e) => e.type))
  return { context, journal, approvals, run, asked, step, statusOf, eventTypes }
})

describe("a run suspending on an approval while a person decides it", () => {
  it.scoped("a decision stored before the suspension is: the run finds it and goes on at once, its lease kept", () =>
    Effect.gen(function*() {
      const { approvals, asked, eventTypes, journal, run, statusOf, step, context } = yield* runAsking
      // The decider read the run as running, so it did not resume it.
      yield* approvals.decide(asked.id, "approved", undefined, undefined)
      const waited = yield* suspendOnApproval(step, { reason: "approval", approvalId: asked.id, tool: "pay" }).pipe(Effect.provide(context))
      expect(waited).toBe("decided")
      expect(yield* statusOf).toBe("running")
      // Nobody was told the run waited: followers would have taken the suspension for its answer.
      expect(yield* eventTypes).not.toContain("run.suspended")
      expect(yield* journal.claim(run, "another", 60_000)).toMatchObject({ _tag: "Held", owner: "executor" })
    }))

  it.scoped("an approval still pending: the run is suspended and its lease let go, for whoever the decision wakes it in; nobody is told it waits before", () =>
    Effect.gen(function*() {
      const { approvals, asked, eventTypes, journal, run, statusOf, step, context } = yield* runAsking
      step.emit("approval.requested", "approval:call_1", { approvalId: asked.id, toolCallId: "call_1", tool: "pay", input: {}, expiresAt: asked.expiresAt })
      // What was stored, and how the run stood, as the run read its approval: its status and the
      // request (with the step that made it), not yet its suspension.
      const atRead: Array<unknown> = []
      const reading = ApprovalStorage.ApprovalStorage.of({
        ...approvals,
        get: (id) => Effect.zipRight(Effect.flatMap(Effect.all([statusOf, eventTypes]), (seen) => Effect.sync(() => atRead.push(...seen))), approvals.get(id))
      })
      const waited = yield* suspendOnApproval(step, { reason: "approval", approvalId: asked.id, tool: "pay" }).pipe(
        Effect.provide(Context.add(context, ApprovalStorage.ApprovalStorage, reading))
      )
      expect(atRead).toEqual(["suspended", ["run.queued", "approval.requested"]])
      expect(waited).toBe("suspended")
      expect(yield* statusOf).toBe("suspended")
      expect((yield* eventTypes).slice(-2)).toEqual(["approval.requested", "run.suspended"])
      expect(yield* journal.claim(run, "another", 60_000)).toMatchObject({ _tag: "Claimed", lease: { owner: "another" } })
    }))

  it.scoped("an approval handed to the run's step is stored with the run's suspension; with the run's lease taken meanwhile, neither is", () =>
    Effect.gen(function*() {
      const { approvals, context, journal, run, statusOf, step } = yield* runAsking
      const second = { id: "apr_2", runId: run.id, toolCallId: "call_2", agent: run.agent, tool: "pay", input: { amount: 5 }, expiresAt: 9e15 }
      step.ask(second)
      step.emit("approval.requested", "approval:call_2", { approvalId: second.id, toolCallId: "call_2", tool: "pay", input: {}, expiresAt: second.expiresAt })
      // Nothing stored until the step is.
      expect(yield* approvals.get(second.id)).toEqual(Option.none())
      const atRead: Array<unknown> = []
      const reading = ApprovalStorage.ApprovalStorage.of({
        ...approvals,
        get: (id) => Effect.tap(approvals.get(id), (found) => Effect.map(statusOf, (status) => atRead.push(status, Option.map(found, (a) => a.status))))
      })
      const waited = yield* suspendOnApproval(step, { reason: "approval", approvalId: second.id, tool: "pay" }).pipe(
        Effect.provide(Context.add(context, ApprovalStorage.ApprovalStorage, reading))
      )
      expect(waited).toBe("suspended")
      expect(atRead).toEqual(["suspended", Option.some("pending")])

      // The lease taken by another executor (a cancel from another process revokes it so) before
      // the next run's step: the approval it asks for is stored with nothing else of the step.
      const next = yield* submit(journal, newRun("r2", { conversationId: "c2" }))
      const stale = yield* journal.claim(next, "executor", 1_000)
      if (stale._tag !== "Claimed") return yield* Effect.dieMessage("the lease is held")
      yield* TestClock.adjust("2 seconds")
      expect(yield* journal.claim(next, "another", 60_000)).toMatchObject({ _tag: "Claimed" })
      const fenced = yield* makeStepBuffer(next, stale.lease).pipe(Effect.provide(context))
      fenced.ask({ ...second, id: "apr_3", runId: next.id, toolCallId: "call_3" })
      const lost = yield* Effect.flip(suspendOnApproval(fenced, { reason: "approval", approvalId: "apr_3", tool: "pay" }).pipe(Effect.provide(context)))
      expect(lost._tag).toBe("LeaseLost")
      expect(yield* approvals.get("apr_3")).toEqual(Option.none())
      expect(yield* approvals.list({ runId: next.id })).toEqual([])
    }))

  it.scoped("the decider resumes a run that was running as it first read it and is suspended by the time its decision is stored", () =>
    Effect.gen(function*() {
      const { asked, context, journal, run } = yield* runAsking
      const store = Context.get(context, Store)
      const resumed: Array<string> = []
      let reads = 0
      // The run's suspension is stored right after the decider's first read of it.
      const suspendingStore = Store.of({
        ...store,
        getRun: (runId) =>
          Effect.tap(store.getRun(runId), () =>
            reads++ === 0
              ? journal.record(run, {
                status: { status: "suspended" },
                events: [draft("suspended", run, { type: "run.suspended", data: { reason: "approval", approvalId: asked.id, tool: "pay" } })]
              }).pipe(Effect.orDie)
              : Effect.void)
      })
      const decisions = yield* makeApprovalDecisions((woken: RunRecord) => Effect.sync(() => void resumed.push(woken.id))).pipe(
        Effect.provide(Context.add(context, Store, suspendingStore))
      )
      yield* decisions.decide(asked.id, "approved", undefined)
      expect(resumed).toEqual([run.id])
    }))
})
