/**
 * The store's behaviour, once per backend: SQLite on a temporary file and PostgreSQL in a fresh
 * schema. Times come from the `TestClock`, so every timestamp is asserted exactly.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option, type Scope, TestClock } from "effect"
import type { FoundryEvent } from "../../src/events/FoundryEvent.js"
import type { ChatMessage } from "../../src/models/Model.js"
import { layerPg } from "../../src/durable/PgStore.js"
import { ConversationRecord, InstanceRecord, RunRecord, type RunStatus, UsageSums } from "../../src/durable/records.js"
import * as SqlStore from "../../src/durable/SqlStore.js"
import { Store } from "../../src/durable/Store.js"
import { freshSchema, skipPostgres } from "../support/postgres.js"

/** A backend under test. */
interface Backend {
  readonly name: string
  readonly skip: boolean
  /**
   * A new, empty place for one test's data, removed when the test ends. The layer opens a store
   * on it; building the layer again reopens the same data.
   */
  readonly fresh: Effect.Effect<Layer.Layer<Store, unknown>, unknown, Scope.Scope>
}

const sqlite: Backend = {
  name: "SQLite",
  skip: false,
  fresh: Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "foundry-store-"))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  ).pipe(
    // A folder that does not exist yet: the layer creates it.
    Effect.map((dir) => SqlStore.layerSqlite(join(dir, "data", "foundry.db")).pipe(Layer.provide(NodeContext.layer)))
  )
}

const postgres: Backend = {
  name: "PostgreSQL",
  skip: skipPostgres,
  fresh: Effect.map(freshSchema, layerPg)
}

/** Opens a store on `layer` for as long as the scope lasts. */
const open = (layer: Layer.Layer<Store, unknown>) => Layer.build(layer).pipe(Effect.map(Context.get(Store)))

/** A store on a fresh place, open for the test. */
const freshStore = (backend: Backend) => Effect.flatMap(backend.fresh, open)

const newRun = (id: string, overrides: { readonly agent?: string; readonly conversationId?: string } = {}) => ({
  id,
  agent: overrides.agent ?? "shop",
  instanceId: "acme",
  conversationId: overrides.conversationId ?? "c1",
  input: `input of ${id}`
})

const event = (
  id: string,
  runId: string,
  type: FoundryEvent["type"],
  data: FoundryEvent["data"] = {}
): Omit<FoundryEvent, "seq"> => ({
  id,
  time: 1_700_000_000_000,
  type,
  traceId: `trace-${runId}`,
  spanId: `span-${id}`,
  parentSpanId: type === "run.queued" ? null : `span-root-${runId}`,
  runId,
  conversationId: "c1",
  instanceId: "acme",
  agent: "shop",
  release: "r1",
  data
})

const user: ChatMessage = { _tag: "user", content: "Where is order 42?" }
const assistant: ChatMessage = {
  _tag: "assistant",
  content: "Let me look.",
  toolCalls: [
    { id: "call-1", name: "lookup", arguments: "{\"orderId\":\"42\"}" },
    { id: "call-2", name: "track", arguments: "{}" }
  ]
}
const tool: ChatMessage = { _tag: "tool", toolCallId: "call-1", name: "lookup", content: "{\"status\":\"shipped\"}" }

for (const backend of [sqlite, postgres]) {
  describe.skipIf(backend.skip)(`the store on ${backend.name}`, () => {
    it.scoped("creates an instance once: a second ensureInstance returns the first record and keeps its context", () =>
      Effect.gen(function*() {
        const store = yield* freshStore(backend)
        yield* TestClock.setTime(1_000)
        const first = yield* store.ensureInstance("shop", "acme", { plan: "pro", seats: 3, tags: ["a"] })
        expect(first).toEqual(
          new InstanceRecord({
            id: "acme",
            agent: "shop",
            context: { plan: "pro", seats: 3, tags: ["a"] },
            createdAt: 1_000,
            updatedAt: 1_000
          })
        )
        yield* TestClock.setTime(5_000)
        const second = yield* store.ensureInstance("shop", "acme", { plan: "free" })
        expect(second).toEqual(first)

        const defaulted = yield* store.ensureInstance("shop", "globex")
        expect(defaulted).toEqual(
          new InstanceRecord({ id: "globex", agent: "shop", context: {}, createdAt: 5_000, updatedAt: 5_000 })
        )
        // Instance ids are per agent: the same id under another agent is another instance.
        const other = yield* store.ensureInstance("support", "acme", { plan: "basic" })
        expect(other).toEqual(
          new InstanceRecord({ id: "acme", agent: "support", context: { plan: "basic" }, createdAt: 5_000, updatedAt: 5_000 })
        )
      }))

    it.scoped("creates conversations and finds them by id", () =>
      Effect.gen(function*() {
        const store = yield* freshStore(backend)
        yield* TestClock.setTime(2_000)
        const created = yield* store.createConversation("c1", "shop", "acme")
        const expected = new ConversationRecord({ id: "c1", agent: "shop", instanceId: "acme", createdAt: 2_000, updatedAt: 2_000 })
        expect(created).toEqual(expected)
        expect(yield* store.getConversation("c1")).toEqual(Option.some(expected))
        expect(yield* store.getConversation("c2")).toEqual(Option.none())
      }))

    it.scoped("a second conversation with the same id is a StoreError", () =>
      Effect.gen(function*() {
        const store = yield* freshStore(backend)
        yield* store.createConversation("c1", "shop", "acme")
        const error = yield* Effect.flip(store.createConversation("c1", "shop", "acme"))
        expect(error._tag).toBe("StoreError")
        expect(error.operation).toBe("createConversation")
      }))

    it.scoped("appends messages in order, numbered 1, 2, 3 per conversation, and reads them back unchanged", () =>
      Effect.gen(function*() {
        const store = yield* freshStore(backend)
        yield* store.createConversation("c1", "shop", "acme")
        yield* store.createConversation("c2", "shop", "acme")
        yield* TestClock.setTime(10_000)
        yield* store.appendMessage("c1", "r1", user)
        yield* TestClock.setTime(11_000)
        yield* store.appendMessage("c1", "r1", assistant)
        yield* store.appendMessage("c2", "r9", { _tag: "user", content: "other conversation" })
        yield* TestClock.setTime(12_000)
        yield* store.appendMessage("c1", "r1", tool)

        expect(yield* store.listMessages("c1")).toEqual([
          { seq: 1, runId: "r1", message: user, createdAt: 10_000 },
          { seq: 2, runId: "r1", message: assistant, createdAt: 11_000 },
          { seq: 3, runId: "r1", message: tool, createdAt: 12_000 }
        ])
        expect(yield* store.listMessages("c2")).toEqual([
          { seq: 1, runId: "r9", message: { _tag: "user", content: "other conversation" }, createdAt: 11_000 }
        ])
        expect(yield* store.listMessages("c3")).toEqual([])
        // Appending a message touches its conversation.
        const c1 = yield* store.getConversation("c1")
        expect(Option.map(c1, (c) => [c.createdAt, c.updatedAt])).toEqual(Option.some([0, 12_000]))
      }))

    it.scoped("creates a run queued, and its status changes set startedAt, finishedAt, output and error", () =>
      Effect.gen(function*() {
        const store = yield* freshStore(backend)
        yield* TestClock.setTime(1_000)
        const created = yield* store.createRun(newRun("r1"))
        const queued = new RunRecord({
          ...newRun("r1"),
          status: "queued",
          output: null,
          error: null,
          createdAt: 1_000,
          startedAt: null,
          finishedAt: null
        })
        expect(created).toEqual(queued)
        expect(yield* store.getRun("r1")).toEqual(Option.some(queued))
        expect(yield* store.getRun("nope")).toEqual(Option.none())

        yield* TestClock.setTime(2_000)
        yield* store.updateRun("r1", { status: "running" })
        const running = new RunRecord({ ...queued, status: "running", startedAt: 2_000 })
        expect(yield* store.getRun("r1")).toEqual(Option.some(running))

        yield* TestClock.setTime(3_000)
        yield* store.updateRun("r1", { status: "suspended" })
        const suspended = new RunRecord({ ...running, status: "suspended" })
        expect(yield* store.getRun("r1")).toEqual(Option.some(suspended))

        yield* TestClock.setTime(4_000)
        yield* store.updateRun("r1", { status: "completed", output: "Order 42 has shipped." })
        expect(yield* store.getRun("r1")).toEqual(
          Option.some(new RunRecord({ ...suspended, status: "completed", output: "Order 42 has shipped.", finishedAt: 4_000 }))
        )

        yield* store.createRun(newRun("r2"))
        yield* TestClock.setTime(5_000)
        yield* store.updateRun("r2", { status: "failed", error: "model unavailable" })
        expect(yield* store.getRun("r2")).toEqual(
          Option.some(
            new RunRecord({
              ...newRun("r2"),
              status: "failed",
              output: null,
              error: "model unavailable",
              createdAt: 4_000,
              startedAt: null,
              finishedAt: 5_000
            })
          )
        )

        yield* store.createRun(newRun("r3"))
        yield* store.updateRun("r3", { status: "cancelled" })
        expect(Option.map(yield* store.getRun("r3"), (run) => [run.status, run.startedAt, run.finishedAt])).toEqual(
          Option.some(["cancelled", null, 5_000])
        )
      }))

    it.scoped("lists runs newest first, filtered by agent and status, up to the limit", () =>
      Effect.gen(function*() {
        const store = yield* freshStore(backend)
        const runs: ReadonlyArray<readonly [string, string]> = [
          ["r1", "shop"],
          ["r2", "support"],
          ["r3", "shop"],
          ["r4", "support"],
          ["r5", "shop"]
        ]
        for (const [index, [id, agent]] of runs.entries()) {
          yield* TestClock.setTime(1_000 * (index + 1))
          yield* store.createRun(newRun(id, { agent }))
        }
        yield* store.updateRun("r3", { status: "completed", output: "ok" })
        yield* store.updateRun("r4", { status: "completed", output: "ok" })
        const ids = (runs: ReadonlyArray<RunRecord>) => runs.map((run) => run.id)

        expect(ids(yield* store.listRuns({ limit: 10 }))).toEqual(["r5", "r4", "r3", "r2", "r1"])
        expect(ids(yield* store.listRuns({ limit: 2 }))).toEqual(["r5", "r4"])
        expect(ids(yield* store.listRuns({ agent: "shop", limit: 10 }))).toEqual(["r5", "r3", "r1"])
        expect(ids(yield* store.listRuns({ status: "completed", limit: 10 }))).toEqual(["r4", "r3"])
        expect(ids(yield* store.listRuns({ agent: "shop", status: "queued", limit: 10 }))).toEqual(["r5", "r1"])
        expect(ids(yield* store.listRuns({ agent: "shop", status: "queued", limit: 1 }))).toEqual(["r5"])
        expect(ids(yield* store.listRuns({ agent: "nobody", limit: 10 }))).toEqual([])
        // Runs created in the same millisecond come newest id first.
        yield* store.createRun(newRun("r6"))
        expect(ids(yield* store.listRuns({ limit: 2 }))).toEqual(["r6", "r5"])
        // The records are whole.
        const [latest] = yield* store.listRuns({ status: "completed", limit: 1 })
        expect(latest).toEqual(
          new RunRecord({
            ...newRun("r4", { agent: "support" }),
            status: "completed",
            output: "ok",
            error: null,
            createdAt: 4_000,
            startedAt: null,
            finishedAt: 5_000
          })
        )
      }))

    it.scoped("adds each turn's usage to its run and sums usage by day, agent, instance and conversation", () =>
      Effect.gen(function*() {
        const store = yield* freshStore(backend)
        const day = 86_400_000
        const runs = [
          { id: "r1", agent: "shop", instanceId: "acme", conversationId: "c1", at: 2 * day + 5 },
          { id: "r2", agent: "shop", instanceId: "acme", conversationId: "c1", at: 2 * day + 7 },
          { id: "r3", agent: "shop", instanceId: "globex", conversationId: "c2", at: 3 * day },
          { id: "r4", agent: "support", instanceId: "acme", conversationId: "c3", at: 3 * day + 1 }
        ]
        for (const run of runs) {
          yield* TestClock.setTime(run.at)
          yield* store.createRun({ ...newRun(run.id, { agent: run.agent, conversationId: run.conversationId }), instanceId: run.instanceId })
        }
        expect(yield* store.addRunUsage("r1", { inputTokens: 10, outputTokens: 5, costUsd: 0.25 })).toEqual(
          new UsageSums({ runs: 1, inputTokens: 10, outputTokens: 5, costUsd: 0.25, unpricedTurns: 0 })
        )
        expect(yield* store.addRunUsage("r1", { inputTokens: 20, outputTokens: 7, costUsd: null })).toEqual(
          new UsageSums({ runs: 1, inputTokens: 30, outputTokens: 12, costUsd: 0.25, unpricedTurns: 1 })
        )
        yield* store.addRunUsage("r2", { inputTokens: 1, outputTokens: 2, costUsd: 0.5 })
        yield* store.addRunUsage("r3", { inputTokens: 100, outputTokens: 50, costUsd: 1 })
        yield* store.addRunUsage("r4", { inputTokens: 1000, outputTokens: 500, costUsd: 2 })
        expect(Option.map(yield* store.getRun("r1"), (run) => [run.inputTokens, run.outputTokens, run.costUsd, run.unpricedTurns]))
          .toEqual(Option.some([30, 12, 0.25, 1]))
        expect((yield* Effect.flip(store.addRunUsage("nope", { inputTokens: 1, outputTokens: 1, costUsd: 0 }))).operation)
          .toBe("addRunUsage")

        const sums = (runs: number, inputTokens: number, outputTokens: number, costUsd: number, unpricedTurns = 0) =>
          ({ runs, inputTokens, outputTokens, costUsd, unpricedTurns })
        expect({ ...(yield* store.sumUsage({})) }).toEqual(sums(4, 1131, 564, 3.75, 1))
        expect({ ...(yield* store.sumUsage({ agent: "shop", instanceId: "acme" })) }).toEqual(sums(2, 31, 14, 0.75, 1))
        expect({ ...(yield* store.sumUsage({ since: 3 * day })) }).toEqual(sums(2, 1100, 550, 3))
        expect({ ...(yield* store.sumUsage({ since: 2 * day, until: 3 * day })) }).toEqual(sums(2, 31, 14, 0.75, 1))
        expect({ ...(yield* store.sumUsage({ agent: "nobody" })) }).toEqual(sums(0, 0, 0, 0))

        const plain = (groups: ReadonlyArray<object>) => groups.map((group) => ({ ...group }))
        expect(plain(yield* store.sumUsageBy({}, "day"))).toEqual([
          { day: 2 * day, ...sums(2, 31, 14, 0.75, 1) },
          { day: 3 * day, ...sums(2, 1100, 550, 3) }
        ])
        expect(plain(yield* store.sumUsageBy({}, "agent"))).toEqual([
          { agent: "shop", ...sums(3, 131, 64, 1.75, 1) },
          { agent: "support", ...sums(1, 1000, 500, 2) }
        ])
        expect(plain(yield* store.sumUsageBy({ agent: "shop" }, "instance"))).toEqual([
          { agent: "shop", instanceId: "acme", ...sums(2, 31, 14, 0.75, 1) },
          { agent: "shop", instanceId: "globex", ...sums(1, 100, 50, 1) }
        ])
        expect(plain(yield* store.sumUsageBy({ instanceId: "acme" }, "conversation"))).toEqual([
          { agent: "shop", instanceId: "acme", conversationId: "c1", ...sums(2, 31, 14, 0.75, 1) },
          { agent: "support", instanceId: "acme", conversationId: "c3", ...sums(1, 1000, 500, 2) }
        ])
        expect(yield* store.sumUsageBy({ agent: "nobody" }, "day")).toEqual([])
      }))

    it.scoped("unfinishedRuns returns the queued and running runs only, oldest first", () =>
      Effect.gen(function*() {
        const store = yield* freshStore(backend)
        const statuses: ReadonlyArray<RunStatus> = ["running", "completed", "queued", "failed", "suspended", "cancelled", "running"]
        for (const [index, status] of statuses.entries()) {
          yield* TestClock.setTime(1_000 * (index + 1))
          yield* store.createRun(newRun(`r${index + 1}`))
          if (status !== "queued") yield* store.updateRun(`r${index + 1}`, { status })
        }
        const unfinished = yield* store.unfinishedRuns
        expect(unfinished.map((run) => [run.id, run.status])).toEqual([
          ["r1", "running"],
          ["r3", "queued"],
          ["r7", "running"]
        ])
      }))

    it.scoped("appends events with increasing seq, and lists them by run and after a seq", () =>
      Effect.gen(function*() {
        const store = yield* freshStore(backend)
        expect(yield* store.appendEvents([])).toEqual([])

        const first = [
          event("e1", "r1", "run.queued"),
          event("e2", "r1", "run.started", { attempt: 1 }),
          event("e3", "r2", "run.queued", { nested: { list: [1, "two", null], flag: true } })
        ]
        const stored = yield* store.appendEvents(first)
        expect(stored.map((e) => e.seq)).toEqual([1, 2, 3])
        expect(stored).toEqual(first.map((e, index) => ({ ...e, seq: index + 1 })))

        const second = yield* store.appendEvents([
          event("e4", "r1", "tool.call.completed", { result: "shipped" }),
          event("e5", "r2", "run.completed")
        ])
        expect(second.map((e) => e.seq)).toEqual([4, 5])
        const all = [...stored, ...second]

        expect(yield* store.listEvents({})).toEqual(all)
        expect((yield* store.listEvents({ runId: "r1" })).map((e) => e.id)).toEqual(["e1", "e2", "e4"])
        expect((yield* store.listEvents({ after: 2 })).map((e) => e.id)).toEqual(["e3", "e4", "e5"])
        expect((yield* store.listEvents({ runId: "r1", after: 1 })).map((e) => e.id)).toEqual(["e2", "e4"])
        expect((yield* store.listEvents({ after: 1, limit: 2 })).map((e) => e.id)).toEqual(["e2", "e3"])
        expect(yield* store.listEvents({ runId: "r2", after: 5 })).toEqual([])
        expect(yield* store.listEvents({ runId: "r3" })).toEqual([])
      }))

    it.scoped("a batch of events with a duplicate id is stored not at all", () =>
      Effect.gen(function*() {
        const store = yield* freshStore(backend)
        yield* store.appendEvents([event("e1", "r1", "run.queued")])
        const error = yield* Effect.flip(store.appendEvents([event("e2", "r1", "run.started"), event("e1", "r1", "run.completed")]))
        expect(error.operation).toBe("appendEvents")
        expect((yield* store.listEvents({})).map((e) => [e.id, e.seq])).toEqual([["e1", 1]])
      }))

    it.scoped("keeps everything when the store is closed and opened again", () =>
      Effect.gen(function*() {
        const place = yield* backend.fresh
        yield* TestClock.setTime(1_000)
        yield* Effect.scoped(
          Effect.gen(function*() {
            const store = yield* open(place)
            yield* store.ensureInstance("shop", "acme", { plan: "pro" })
            yield* store.createConversation("c1", "shop", "acme")
            yield* store.createRun(newRun("r1"))
            yield* store.updateRun("r1", { status: "running" })
            yield* store.appendMessage("c1", "r1", user)
            yield* store.appendMessage("c1", "r1", assistant)
            yield* store.appendEvents([event("e1", "r1", "run.queued"), event("e2", "r1", "run.started")])
          })
        )

        yield* TestClock.setTime(2_000)
        const store = yield* open(place)
        expect(yield* store.ensureInstance("shop", "acme", { plan: "free" })).toEqual(
          new InstanceRecord({ id: "acme", agent: "shop", context: { plan: "pro" }, createdAt: 1_000, updatedAt: 1_000 })
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

        // Numbering continues where it stopped.
        yield* store.appendMessage("c1", "r1", tool)
        expect((yield* store.listMessages("c1")).map((m) => [m.seq, m.message])).toEqual([[1, user], [2, assistant], [3, tool]])
        const [next] = yield* store.appendEvents([event("e3", "r1", "run.completed")])
        expect(next?.seq).toBe(3)
        expect((yield* store.listEvents({ runId: "r1" })).map((e) => [e.id, e.seq])).toEqual([["e1", 1], ["e2", 2], ["e3", 3]])
      }))
  })
}
