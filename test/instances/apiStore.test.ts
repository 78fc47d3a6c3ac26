/**
 * What the instances API reads from the store beside instances, on each backend: runs filtered by
 * instance, and conversations (all, an agent's, an instance's) with their run counts and latest run.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { ConversationSummary, type RunRecord } from "../../src/durable/records.js"
import { backends, freshStorage } from "../journal/backends.js"
import { newRun, submit } from "../journal/fixtures.js"

for (const backend of backends) {
  describe.skipIf(backend.skip)(`an instance's runs and conversations on ${backend.name}`, () => {
    it.scoped("runs filter by instance; conversations come most recently active first, with their runs counted and the latest", () =>
      Effect.gen(function*() {
        const { journal, store } = yield* freshStorage(backend)
        const runs = [
          newRun("r1", { conversationId: "c1" }),
          newRun("r2", { conversationId: "c2" }),
          newRun("r3", { conversationId: "c1" }),
          newRun("r4", { instanceId: "globex", conversationId: "c3" }),
          newRun("r5", { agent: "support", conversationId: "c4" })
        ]
        const submitted: Array<RunRecord> = []
        for (const [index, run] of runs.entries()) {
          yield* TestClock.setTime(1_000 * (index + 1))
          submitted.push(yield* submit(journal, run, { newConversation: run.id !== "r3" }))
        }
        const r3 = submitted[2]
        if (r3 === undefined) return yield* Effect.dieMessage("r3 was not submitted")
        yield* journal.record(r3, { status: { status: "completed" } })

        const ids = (found: ReadonlyArray<RunRecord>) => found.map((run) => run.id)
        expect(ids(yield* store.listRuns({ instanceId: "acme", limit: 10 }))).toEqual(["r5", "r3", "r2", "r1"])
        expect(ids(yield* store.listRuns({ agent: "shop", instanceId: "acme", limit: 10 }))).toEqual(["r3", "r2", "r1"])
        expect(ids(yield* store.listRuns({ agent: "shop", instanceId: "acme", status: "completed", limit: 10 }))).toEqual(["r3"])

        const conversations = yield* store.listConversations({ agent: "shop", instanceId: "acme", limit: 10 })
        expect(conversations).toEqual([
          new ConversationSummary({
            id: "c1",
            agent: "shop",
            instanceId: "acme",
            createdAt: 1_000,
            updatedAt: 3_000,
            runs: 2,
            lastRunId: "r3",
            lastRunStatus: "completed",
            lastRunCreatedAt: 3_000,
            lastRunInput: "input of r3"
          }),
          new ConversationSummary({
            id: "c2",
            agent: "shop",
            instanceId: "acme",
            createdAt: 2_000,
            updatedAt: 2_000,
            runs: 1,
            lastRunId: "r2",
            lastRunStatus: "queued",
            lastRunCreatedAt: 2_000,
            lastRunInput: "input of r2"
          })
        ])
        const idsOf = (found: ReadonlyArray<ConversationSummary>) => found.map((c) => c.id)
        expect(idsOf(yield* store.listConversations({ agent: "shop", instanceId: "acme", limit: 1 }))).toEqual(["c1"])
        expect(idsOf(yield* store.listConversations({ agent: "support", instanceId: "acme", limit: 10 }))).toEqual(["c4"])
        expect(yield* store.listConversations({ agent: "shop", instanceId: "nobody", limit: 10 })).toEqual([])
        // Every conversation, an agent's, or an instance's of any agent, paged on from where a page ended.
        expect(idsOf(yield* store.listConversations({ limit: 10 }))).toEqual(["c4", "c3", "c1", "c2"])
        expect(idsOf(yield* store.listConversations({ agent: "shop", limit: 10 }))).toEqual(["c3", "c1", "c2"])
        expect(idsOf(yield* store.listConversations({ instanceId: "acme", limit: 10 }))).toEqual(["c4", "c1", "c2"])
        const [, second] = yield* store.listConversations({ limit: 2 })
        if (second === undefined) return yield* Effect.dieMessage("no second conversation")
        expect(idsOf(yield* store.listConversations({ before: { updatedAt: second.updatedAt, id: second.id }, limit: 10 }))).toEqual(["c1", "c2"])
      }))
  })
}
