/**
 * The store's behaviour (instances, conversations and runs as read back), once per backend: SQLite
 * on a temporary file and PostgreSQL in a fresh schema. Runs are written the way the runtime
 * writes them, through the run journal (test/journal/runJournal.test.ts covers the writing).
 * Times come from the `TestClock`, so every timestamp is asserted exactly.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import { ConversationRecord, InstanceRecord, RunRecord, type RunStatus } from "../../src/durable/records.js"
import { backends, freshStorage, open } from "../journal/backends.js"
import { newRun, submit } from "../journal/fixtures.js"

for (const backend of backends) {
  describe.skipIf(backend.skip)(`the store on ${backend.name}`, () => {
    it.scoped("creates an instance once: a second ensureInstance returns the first record and keeps its context", () =>
      Effect.gen(function*() {
        const { instances } = yield* freshStorage(backend)
        yield* TestClock.setTime(1_000)
        const first = yield* instances.ensure("shop", "acme", { plan: "pro", seats: 3, tags: ["a"] })
        expect(first).toEqual(
          new InstanceRecord({
            id: "acme",
            agent: "shop",
            context: { plan: "pro", seats: 3, tags: ["a"] }, provisioningKey: null, status: "active", statusReason: null,
            createdAt: 1_000,
            updatedAt: 1_000
          })
        )
        yield* TestClock.setTime(5_000)
        const second = yield* instances.ensure("shop", "acme", { plan: "free" })
        expect(second).toEqual(first)
        expect(yield* instances.get("shop", "acme")).toEqual(Option.some(first))
        expect(yield* instances.get("shop", "nobody")).toEqual(Option.none())

        const defaulted = yield* instances.ensure("shop", "globex")
        expect(defaulted).toEqual(
          new InstanceRecord({ id: "globex", agent: "shop", context: {}, provisioningKey: null, status: "active", statusReason: null, createdAt: 5_000, updatedAt: 5_000 })
        )
        // Instance ids are per agent: the same id under another agent is another instance.
        const other = yield* instances.ensure("support", "acme", { plan: "basic" })
        expect(other).toEqual(
          new InstanceRecord({ id: "acme", agent: "support", context: { plan: "basic" }, provisioningKey: null, status: "active", statusReason: null, createdAt: 5_000, updatedAt: 5_000 })
        )
      }))

    it.scoped("finds conversations by id", () =>
      Effect.gen(function*() {
        const { journal, store } = yield* freshStorage(backend)
        yield* TestClock.setTime(2_000)
        yield* submit(journal, newRun("r1"))
        expect(yield* store.getConversation("c1")).toEqual(
          Option.some(new ConversationRecord({ id: "c1", agent: "shop", instanceId: "acme", createdAt: 2_000, updatedAt: 2_000 }))
        )
        expect(yield* store.getConversation("c2")).toEqual(Option.none())
      }))

    it.scoped("reads a run back whole by id, and an unknown id as None", () =>
      Effect.gen(function*() {
        const { journal, store } = yield* freshStorage(backend)
        yield* TestClock.setTime(1_000)
        yield* submit(journal, newRun("r1", { idempotencyKey: "k1" }))
        const queued = new RunRecord({
          ...newRun("r1"),
          status: "queued",
          output: null,
          error: null,
          createdAt: 1_000,
          startedAt: null,
          finishedAt: null
        })
        expect(yield* store.getRun("r1")).toEqual(Option.some(queued))
        expect(yield* store.findRunByIdempotencyKey("k1")).toEqual(Option.some(queued))
        expect(yield* store.getRun("nope")).toEqual(Option.none())
        expect(yield* store.findRunByIdempotencyKey("k2")).toEqual(Option.none())
      }))

    it.scoped("lists runs newest first, filtered by agent and status, up to the limit", () =>
      Effect.gen(function*() {
        const { journal, store } = yield* freshStorage(backend)
        const agents: ReadonlyArray<readonly [string, string]> = [
          ["r1", "shop"],
          ["r2", "support"],
          ["r3", "shop"],
          ["r4", "support"],
          ["r5", "shop"]
        ]
        const records = new Map<string, RunRecord>()
        for (const [index, [id, agent]] of agents.entries()) {
          yield* TestClock.setTime(1_000 * (index + 1))
          records.set(id, yield* submit(journal, newRun(id, { agent, conversationId: `c-${id}` })))
        }
        for (const id of ["r3", "r4"]) {
          const run = records.get(id)
          if (run !== undefined) yield* journal.record(run, { status: { status: "completed", output: "ok" } })
        }
        const ids = (runs: ReadonlyArray<RunRecord>) => runs.map((run) => run.id)

        expect(ids(yield* store.listRuns({ limit: 10 }))).toEqual(["r5", "r4", "r3", "r2", "r1"])
        expect(ids(yield* store.listRuns({ limit: 2 }))).toEqual(["r5", "r4"])
        expect(ids(yield* store.listRuns({ agent: "shop", limit: 10 }))).toEqual(["r5", "r3", "r1"])
        expect(ids(yield* store.listRuns({ status: "completed", limit: 10 }))).toEqual(["r4", "r3"])
        expect(ids(yield* store.listRuns({ agent: "shop", status: "queued", limit: 10 }))).toEqual(["r5", "r1"])
        expect(ids(yield* store.listRuns({ agent: "shop", status: "queued", limit: 1 }))).toEqual(["r5"])
        expect(ids(yield* store.listRuns({ agent: "nobody", limit: 10 }))).toEqual([])
        // Runs created in the same millisecond come newest id first.
        yield* submit(journal, newRun("r6", { conversationId: "c-r6" }))
        expect(ids(yield* store.listRuns({ limit: 2 }))).toEqual(["r6", "r5"])
        // Page after page, each from the last run of the one before, ties on time included.
        expect(ids(yield* store.listRuns({ limit: 2, before: "r6" }))).toEqual(["r5", "r4"])
        expect(ids(yield* store.listRuns({ limit: 2, before: "r5" }))).toEqual(["r4", "r3"])
        expect(ids(yield* store.listRuns({ limit: 2, before: "r3" }))).toEqual(["r2", "r1"])
        expect(ids(yield* store.listRuns({ limit: 2, before: "r1" }))).toEqual([])
        expect(ids(yield* store.listRuns({ agent: "shop", limit: 1, before: "r5" }))).toEqual(["r3"])
        // The records are whole.
        const [latest] = yield* store.listRuns({ status: "completed", limit: 1 })
        expect(latest).toEqual(
          new RunRecord({
            ...newRun("r4", { agent: "support", conversationId: "c-r4" }),
            status: "completed",
            output: "ok",
            error: null,
            createdAt: 4_000,
            startedAt: null,
            finishedAt: 5_000
          })
        )
      }))

    it.scoped("unfinishedRuns returns the queued and running runs only, oldest first", () =>
      Effect.gen(function*() {
        const { journal, store } = yield* freshStorage(backend)
        const statuses: ReadonlyArray<RunStatus> = ["running", "completed", "queued", "failed", "suspended", "cancelled", "running"]
        for (const [index, status] of statuses.entries()) {
          yield* TestClock.setTime(1_000 * (index + 1))
          const id = `r${index + 1}`
          const run = yield* submit(journal, newRun(id, { conversationId: `c-${id}` }))
          if (status !== "queued") yield* journal.record(run, { status: { status } })
        }
        const unfinished = yield* store.unfinishedRuns
        expect(unfinished.map((run) => [run.id, run.status])).toEqual([
          ["r1", "running"],
          ["r3", "queued"],
          ["r7", "running"]
        ])
      }))

    it.scoped("finds the suspended runs that wait on nothing: no approval pending, no child still going", () =>
      Effect.gen(function*() {
        const { database, journal, store } = yield* freshStorage(backend)
        yield* TestClock.setTime(1_000)
        const suspended = (id: string) =>
          Effect.tap(submit(journal, newRun(id, { conversationId: `c-${id}` })), (run) => journal.record(run, { status: { status: "suspended" } }))
        const approval = (runId: string, status: "pending" | "approved") =>
          database.write({
            statements: [{
              sql: `INSERT INTO foundry_approvals (id, run_id, tool_call_id, agent, tool, input, status, created_at, expires_at)
                VALUES (?, ?, ?, 'shop', 'pay', '{}', ?, 1000, 90000)`,
              params: [`apr-${runId}-${status}`, runId, `call-${status}`, status]
            }]
          })
        const child = (parentRunId: string, status: RunStatus) =>
          Effect.tap(
            submit(journal, { ...newRun(`k-${parentRunId}`, { conversationId: `ck-${parentRunId}` }), parentRunId, parentToolCallId: "call_1" }),
            (run) => status === "queued" ? Effect.void : journal.record(run, { status: { status } })
          )
        // Its approval decided; its approval pending (and an earlier one decided); its child ended;
        // its child still going; waiting for a build (nothing in the store); running, not suspended.
        yield* Effect.zipRight(suspended("decided"), approval("decided", "approved"))
        yield* Effect.zipRight(suspended("pending"), Effect.zipRight(approval("pending", "approved"), approval("pending", "pending")))
        yield* Effect.zipRight(suspended("childEnded"), child("childEnded", "completed"))
        yield* Effect.zipRight(suspended("childGoing"), child("childGoing", "running"))
        yield* suspended("build")
        yield* Effect.tap(submit(journal, newRun("running", { conversationId: "c-running" })), (run) => journal.record(run, { status: { status: "running" } }))
        const ready = ["build", "childEnded", "decided"]
        expect((yield* store.suspendedReadyToResume).map((run) => run.id).sort()).toEqual(ready)
        for (const id of ["decided", "pending", "childEnded", "childGoing", "build", "running", "nobody"]) {
          expect(Option.map(yield* store.readyToResume(id), (run) => run.id), id).toEqual(ready.includes(id) ? Option.some(id) : Option.none())
        }
      }))

    it.scoped("keeps instances, conversations and runs when the store is closed and opened again", () =>
      Effect.gen(function*() {
        const place = yield* backend.fresh
        yield* TestClock.setTime(1_000)
        yield* Effect.scoped(
          Effect.gen(function*() {
            const { journal, instances } = yield* open(place)
            yield* instances.ensure("shop", "acme", { plan: "pro" })
            const run = yield* submit(journal, newRun("r1"))
            yield* journal.record(run, { status: { status: "running" } })
          })
        )

        yield* TestClock.setTime(2_000)
        const { store, instances } = yield* open(place)
        expect(yield* instances.ensure("shop", "acme", { plan: "free" })).toEqual(
          new InstanceRecord({ id: "acme", agent: "shop", context: { plan: "pro" }, provisioningKey: null, status: "active", statusReason: null, createdAt: 1_000, updatedAt: 1_000 })
        )
        expect(yield* store.getConversation("c1")).toEqual(
          Option.some(new ConversationRecord({ id: "c1", agent: "shop", instanceId: "acme", createdAt: 1_000, updatedAt: 1_000 }))
        )
        const running = new RunRecord({
          ...newRun("r1"),
          status: "running",
          output: null,
          error: null,
          createdAt: 1_000,
          startedAt: 1_000,
          finishedAt: null
        })
        expect(yield* store.getRun("r1")).toEqual(Option.some(running))
        expect(yield* store.unfinishedRuns).toEqual([running])
      }))
  })
}
