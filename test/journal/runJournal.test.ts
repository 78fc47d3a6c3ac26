/**
 * The run journal, once per backend (SQLite on a temporary file, PostgreSQL in a fresh schema):
 * a run's submission and each of its steps are one write unit (messages, status, usage and
 * events together, or nothing), fenced by the conversation's lease, and steps of concurrent runs
 * share transactions. What it wrote is read back through the store and the event storage. Times
 * come from the `TestClock`, which is the journal's clock, so every timestamp is asserted exactly.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Option, TestClock } from "effect"
import { ConversationRecord, InstanceRecord, RunRecord, UsageSums } from "../../src/durable/records.js"
import type { EventContent, FoundryEvent } from "../../src/events/FoundryEvent.js"
import type { StoreError } from "../../src/durable/StoreError.js"
import type { ChatMessage } from "../../src/models/Model.js"
import { type Claim, historyOwner, type Step } from "../../src/journal/journalRecords.js"
import { insertEvents } from "../../src/events/EventStorage.js"
import { LeaseLost } from "../../src/journal/RunJournal.js"
import { type Backend, backends, freshStorage, open, refuseEvent, release, type Storage } from "./backends.js"
import { assistant, completed, draft, newRun, started, submit, tool, user } from "./fixtures.js"

/** The run as `submit` queued it at `createdAt`. */
const queuedRecord = (run: ReturnType<typeof newRun>, createdAt: number) =>
  new RunRecord({
    id: run.id,
    agent: run.agent,
    instanceId: run.instanceId,
    conversationId: run.conversationId,
    input: run.input,
    release: run.release,
    status: "queued",
    output: null,
    error: null,
    createdAt,
    startedAt: null,
    finishedAt: null
  })

/** Write transactions committed so far. */
const transactions = (storage: Storage) => Effect.map(storage.database.stats, (stats) => stats.writeTransactions)

/** Ids and seqs of the events `runId` has stored (every event when `undefined`). */
const eventIds = (storage: Storage, runId?: string) =>
  Effect.map(storage.events.list({ runId }), (events) => events.map((e) => [e.id, e.seq]))

/** The lease a claim took; a test that expects to get it fails when the lease is held. */
const leaseOf = (claim: Effect.Effect<Claim, StoreError>) =>
  Effect.flatMap(claim, (claimed) =>
    claimed._tag === "Claimed" ? Effect.succeed(claimed.lease) : Effect.dieMessage(`the lease is held until ${claimed.expiresAt}`))

const journalTests = (backend: Backend) => {
  it.scoped("submit writes the instance (once), the conversation, the queued run and its run.queued event in one unit", () =>
    Effect.gen(function*() {
      const storage = yield* freshStorage(backend)
      const { journal, store, events, instances } = storage
      yield* TestClock.setTime(1_000)
      const before = yield* transactions(storage)
      const r1 = yield* submit(journal, newRun("r1"))
      expect(yield* transactions(storage)).toBe(before + 1)

      const queued = queuedRecord(newRun("r1"), 1_000)
      expect(r1).toEqual(queued)
      expect(yield* store.getRun("r1")).toEqual(Option.some(queued))
      expect(yield* instances.get("shop", "acme")).toEqual(
        Option.some(new InstanceRecord({ id: "acme", agent: "shop", context: {}, provisioningKey: null, status: "active", statusReason: null, createdAt: 1_000, updatedAt: 1_000 }))
      )
      expect(yield* store.getConversation("c1")).toEqual(
        Option.some(new ConversationRecord({ id: "c1", agent: "shop", instanceId: "acme", createdAt: 1_000, updatedAt: 1_000 }))
      )
      const queuedEvent: FoundryEvent = { ...draft("queued-r1", r1, { type: "run.queued", data: { input: "input of r1" } }), id: "queued-r1", seq: 1, time: 1_000, release }
      expect(yield* events.list({})).toEqual([queuedEvent])

      // A second run of the instance and conversation: the instance stays as it was, the conversation is touched.
      yield* TestClock.setTime(5_000)
      yield* submit(journal, newRun("r2"), { newConversation: false })
      expect(yield* instances.get("shop", "acme")).toEqual(
        Option.some(new InstanceRecord({ id: "acme", agent: "shop", context: {}, provisioningKey: null, status: "active", statusReason: null, createdAt: 1_000, updatedAt: 1_000 }))
      )
      expect(yield* store.getConversation("c1")).toEqual(
        Option.some(new ConversationRecord({ id: "c1", agent: "shop", instanceId: "acme", createdAt: 1_000, updatedAt: 5_000 }))
      )
      expect(yield* store.getRun("r2")).toEqual(Option.some(queuedRecord(newRun("r2"), 5_000)))
      expect(yield* eventIds(storage)).toEqual([["queued-r1", 1], ["queued-r2", 2]])

      // An instance made beforehand keeps its context.
      yield* instances.ensure("shop", "globex", { plan: "pro" })
      yield* submit(journal, newRun("r3", { instanceId: "globex", conversationId: "c3" }))
      expect(Option.map(yield* instances.get("shop", "globex"), (i) => i.context)).toEqual(Option.some({ plan: "pro" }))
    }))

  it.scoped("a second conversation with the same id is a StoreError, and nothing of that submission is written", () =>
    Effect.gen(function*() {
      const storage = yield* freshStorage(backend)
      const { journal, store } = storage
      yield* submit(journal, newRun("r1"))
      const error = yield* Effect.flip(submit(journal, newRun("r2")))
      expect(error._tag).toBe("StoreError")
      expect(yield* store.getRun("r2")).toEqual(Option.none())
      expect(yield* eventIds(storage)).toEqual([["queued-r1", 1]])
    }))

  it.scoped("a second submit with the same idempotency key is a StoreError, and nothing of it is written", () =>
    Effect.gen(function*() {
      const storage = yield* freshStorage(backend)
      const { journal, store, instances } = storage
      yield* submit(journal, newRun("r1", { idempotencyKey: "k1" }))
      const error = yield* Effect.flip(submit(journal, newRun("r2", { conversationId: "c2", instanceId: "globex", idempotencyKey: "k1" })))
      expect(error._tag).toBe("StoreError")
      expect(Option.map(yield* store.findRunByIdempotencyKey("k1"), (run) => run.id)).toEqual(Option.some("r1"))
      expect(yield* store.getRun("r2")).toEqual(Option.none())
      // The conversation and the instance of the refused submission are not there either.
      expect(yield* store.getConversation("c2")).toEqual(Option.none())
      expect(yield* instances.get("shop", "globex")).toEqual(Option.none())
      expect(yield* eventIds(storage)).toEqual([["queued-r1", 1]])
    }))

  it.scoped("record numbers messages 1, 2, 3 per conversation and reads them back unchanged", () =>
    Effect.gen(function*() {
      const { journal, store } = yield* freshStorage(backend)
      const r1 = yield* submit(journal, newRun("r1"))
      const r9 = yield* submit(journal, newRun("r9", { conversationId: "c2" }))
      yield* TestClock.setTime(10_000)
      yield* journal.record(r1, { messages: [user] })
      yield* TestClock.setTime(11_000)
      yield* journal.record(r1, { messages: [assistant] })
      yield* journal.record(r9, { messages: [{ _tag: "user", content: "other conversation" }] })
      yield* TestClock.setTime(12_000)
      yield* journal.record(r1, { messages: [tool] })

      expect(yield* store.listMessages("c1")).toEqual([
        { seq: 1, runId: "r1", message: user, createdAt: 10_000 },
        { seq: 2, runId: "r1", message: assistant, createdAt: 11_000 },
        { seq: 3, runId: "r1", message: tool, createdAt: 12_000 }
      ])
      expect(yield* store.listMessages("c2")).toEqual([
        { seq: 1, runId: "r9", message: { _tag: "user", content: "other conversation" }, createdAt: 11_000 }
      ])
      expect(yield* store.listMessages("c3")).toEqual([])

      // Messages of one step are numbered in order, after the conversation's last.
      yield* TestClock.setTime(13_000)
      yield* journal.record(r1, { messages: [assistant, tool] })
      expect((yield* store.listMessages("c1")).map((m) => [m.seq, m.message, m.createdAt])).toEqual([
        [1, user, 10_000],
        [2, assistant, 11_000],
        [3, tool, 12_000],
        [4, assistant, 13_000],
        [5, tool, 13_000]
      ])
    }))

  it.scoped("a submitted history of any length is numbered in order before the run's own messages, in a few statements", () =>
    Effect.gen(function*() {
      const storage = yield* freshStorage(backend)
      const { journal, store } = storage
      const history = Array.from({ length: 250 }, (_, n): ChatMessage => n % 2 === 0 ? { _tag: "user", content: `question ${n}` } : { ...assistant, content: `answer ${n}` })
      const statementsBefore = (yield* storage.database.stats).statements
      const r1 = yield* submit(journal, { ...newRun("r1"), history })
      const statementsOfSubmit = (yield* storage.database.stats).statements - statementsBefore
      yield* journal.record(r1, { messages: [user, assistant] })
      const stored = yield* store.listMessages("c1")
      expect(stored.map((m) => [m.seq, m.runId, m.message])).toEqual([
        ...history.map((message, n) => [n + 1, historyOwner("r1"), message]),
        [251, "r1", user],
        [252, "r1", assistant]
      ])
      // The history's 250 messages in seven statements (64, 64, 64, 32, 16, 8, 2): the submission of a run without one, and seven more.
      const plainBefore = (yield* storage.database.stats).statements
      yield* submit(journal, newRun("r2", { conversationId: "c2" }))
      expect(statementsOfSubmit - ((yield* storage.database.stats).statements - plainBefore)).toBe(7)
    }))

  it.scoped("status changes set startedAt, finishedAt, output and error", () =>
    Effect.gen(function*() {
      const { journal, store } = yield* freshStorage(backend)
      yield* TestClock.setTime(1_000)
      const r1 = yield* submit(journal, newRun("r1"))
      const queued = queuedRecord(newRun("r1"), 1_000)

      yield* TestClock.setTime(2_000)
      yield* journal.record(r1, { status: { status: "running" } })
      const running = new RunRecord({ ...queued, status: "running", startedAt: 2_000 })
      expect(yield* store.getRun("r1")).toEqual(Option.some(running))

      yield* TestClock.setTime(3_000)
      yield* journal.record(r1, { status: { status: "suspended" } })
      const suspended = new RunRecord({ ...running, status: "suspended" })
      expect(yield* store.getRun("r1")).toEqual(Option.some(suspended))

      // Resumed: still started when it first started.
      yield* TestClock.setTime(3_500)
      yield* journal.record(r1, { status: { status: "running" } })
      expect(Option.map(yield* store.getRun("r1"), (run) => [run.status, run.startedAt])).toEqual(Option.some(["running", 2_000]))

      yield* TestClock.setTime(4_000)
      yield* journal.record(r1, { status: { status: "completed", output: "Order 42 has shipped." } })
      expect(yield* store.getRun("r1")).toEqual(
        Option.some(new RunRecord({ ...suspended, status: "completed", output: "Order 42 has shipped.", finishedAt: 4_000 }))
      )

      const r2 = yield* submit(journal, newRun("r2", { conversationId: "c2" }))
      yield* TestClock.setTime(5_000)
      yield* journal.record(r2, { status: { status: "failed", error: "model unavailable" } })
      expect(yield* store.getRun("r2")).toEqual(
        Option.some(new RunRecord({ ...queuedRecord(newRun("r2", { conversationId: "c2" }), 4_000), status: "failed", error: "model unavailable", finishedAt: 5_000 }))
      )

      const r3 = yield* submit(journal, newRun("r3", { conversationId: "c3" }))
      yield* journal.record(r3, { status: { status: "cancelled" } })
      expect(Option.map(yield* store.getRun("r3"), (run) => [run.status, run.startedAt, run.finishedAt])).toEqual(
        Option.some(["cancelled", null, 5_000])
      )
    }))

  it.scoped("each turn's usage adds up on its run, and usage sums by day, agent, instance and conversation", () =>
    Effect.gen(function*() {
      const { journal, store } = yield* freshStorage(backend)
      const day = 86_400_000
      const runs = [
        { id: "r1", agent: "shop", instanceId: "acme", conversationId: "c1", at: 2 * day + 5 },
        { id: "r2", agent: "shop", instanceId: "acme", conversationId: "c1", at: 2 * day + 7 },
        { id: "r3", agent: "shop", instanceId: "globex", conversationId: "c2", at: 3 * day },
        { id: "r4", agent: "support", instanceId: "acme", conversationId: "c3", at: 3 * day + 1 }
      ]
      const records = new Map<string, RunRecord>()
      for (const run of runs) {
        yield* TestClock.setTime(run.at)
        const record = yield* submit(journal, newRun(run.id, run), { newConversation: run.id !== "r2" })
        records.set(run.id, record)
      }
      const usageOf = (id: string) =>
        Effect.map(store.getRun(id), Option.map((run) => [run.inputTokens, run.outputTokens, run.costUsd, run.unpricedTurns]))
      const record = (id: string, usage: ReadonlyArray<{ inputTokens: number; outputTokens: number; costUsd: number | null }>) =>
        Effect.flatMap(Effect.fromNullable(records.get(id)), (run) => journal.record(run, { usage }))

      yield* record("r1", [{ inputTokens: 10, outputTokens: 5, costUsd: 0.25 }])
      expect(yield* usageOf("r1")).toEqual(Option.some([10, 5, 0.25, 0]))
      // A turn on a model without a price counts its tokens and one unpriced turn.
      yield* record("r1", [{ inputTokens: 20, outputTokens: 7, costUsd: null }])
      expect(yield* usageOf("r1")).toEqual(Option.some([30, 12, 0.25, 1]))
      expect({ ...(yield* store.sumUsage({ conversationId: "c1", since: 2 * day + 5, until: 2 * day + 6 })) }).toEqual(
        { ...new UsageSums({ runs: 1, inputTokens: 30, outputTokens: 12, costUsd: 0.25, unpricedTurns: 1 }) }
      )
      // Two turns in one step both count.
      yield* record("r2", [{ inputTokens: 1, outputTokens: 1, costUsd: 0.25 }, { inputTokens: 0, outputTokens: 1, costUsd: 0.25 }])
      expect(yield* usageOf("r2")).toEqual(Option.some([1, 2, 0.5, 0]))
      yield* record("r3", [{ inputTokens: 100, outputTokens: 50, costUsd: 1 }])
      yield* record("r4", [{ inputTokens: 1000, outputTokens: 500, costUsd: 2 }])

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

  it.scoped("a step that changes a run's status adds its turns' usage in the same update of the run's row", () =>
    Effect.gen(function*() {
      const storage = yield* freshStorage(backend)
      const { journal, store } = storage
      yield* TestClock.setTime(1_000)
      const r1 = yield* submit(journal, newRun("r1"))
      const statements = Effect.map(storage.database.stats, (stats) => stats.statements)
      const record = (step: Step) =>
        Effect.gen(function*() {
          const before = yield* statements
          yield* journal.record(r1, step)
          return (yield* statements) - before
        })
      const stored = Effect.map(store.getRun("r1"), Option.map((run) => [run.status, run.startedAt, run.inputTokens, run.outputTokens, run.costUsd, run.unpricedTurns]))
      // Each step one write: its status and usage together, or its usage alone (a step that ends the
      // run without its lease reads first that it has not ended).
      expect(yield* record({ status: { status: "running" }, usage: [{ inputTokens: 10, outputTokens: 5, costUsd: 0.25 }] })).toBe(1)
      expect(yield* stored).toEqual(Option.some(["running", 1_000, 10, 5, 0.25, 0]))
      expect(yield* record({ usage: [{ inputTokens: 1, outputTokens: 1, costUsd: null }, { inputTokens: 2, outputTokens: 3, costUsd: 0.5 }] })).toBe(1)
      expect(yield* stored).toEqual(Option.some(["running", 1_000, 13, 9, 0.75, 1]))
      yield* TestClock.setTime(2_000)
      expect(yield* record({ status: { status: "completed", output: "done" }, usage: [{ inputTokens: 7, outputTokens: 2, costUsd: null }] })).toBe(2)
      expect(yield* stored).toEqual(Option.some(["completed", 1_000, 20, 11, 0.75, 2]))
      expect(Option.map(yield* store.getRun("r1"), (run) => [run.output, run.finishedAt])).toEqual(Option.some(["done", 2_000]))
    }))

  it.scoped("events get increasing seq, and are listed by run, by conversation and after a seq", () =>
    Effect.gen(function*() {
      const { database, journal, events } = yield* freshStorage(backend)
      yield* TestClock.setTime(1_000)
      const r1 = yield* submit(journal, newRun("r1"), { queuedId: "e1" })
      expect(yield* journal.record(r1, { messages: [user] })).toEqual([])

      yield* TestClock.setTime(2_000)
      const e2: EventContent = { type: "run.started", data: { input: "input of r1", model: "demo", requestedModel: "openai:gpt-4.1" } }
      const r2Queued = { input: "input of r2", source: { nested: { list: [1, "two", null], flag: true } } }
      const e4: EventContent = { type: "tool.call.completed", data: { toolCallId: "call-2", tool: "track", input: {}, output: "shipped", durationMs: 5 } }
      const startedEvents = yield* journal.record(r1, { events: [draft("e2", r1, e2)] })
      const r2 = yield* submit(journal, newRun("r2", { conversationId: "c2" }), { queuedId: "e3", data: r2Queued })
      yield* TestClock.setTime(3_000)
      const last = yield* journal.record(r1, {
        events: [draft("e4", r1, e4), draft("e5", r1, completed)]
      })
      expect(last.map((e) => e.seq)).toEqual([4, 5])

      const stored = (id: string, run: RunRecord, content: EventContent, seq: number, time: number): FoundryEvent =>
        ({ ...draft(id, run, content), id, seq, time, release })
      const all = [
        stored("e1", r1, { type: "run.queued", data: { input: "input of r1" } }, 1, 1_000),
        stored("e2", r1, e2, 2, 2_000),
        stored("e3", r2, { type: "run.queued", data: r2Queued }, 3, 2_000),
        stored("e4", r1, e4, 4, 3_000),
        stored("e5", r1, completed, 5, 3_000)
      ]
      // A step returns its events as stored.
      expect(startedEvents).toEqual([all[1]])
      expect(last).toEqual(all.slice(3))

      expect(yield* events.list({})).toEqual(all)
      expect((yield* events.list({ runId: "r1" })).map((e) => e.id)).toEqual(["e1", "e2", "e4", "e5"])
      expect((yield* events.list({ after: 2 })).map((e) => e.id)).toEqual(["e3", "e4", "e5"])
      expect((yield* events.list({ runId: "r1", after: 1 })).map((e) => e.id)).toEqual(["e2", "e4", "e5"])
      expect((yield* events.list({ after: 1, limit: 2 })).map((e) => e.id)).toEqual(["e2", "e3"])
      expect((yield* events.list({ conversationId: "c1" })).map((e) => e.id)).toEqual(["e1", "e2", "e4", "e5"])
      expect((yield* events.list({ conversationId: "c2", after: 1 })).map((e) => e.id)).toEqual(["e3"])
      expect(yield* events.list({ conversationId: "c3" })).toEqual([])
      // Events of no run (an instance's, a webhook delivery's) are those of no conversation.
      const instanceNote = { ...stored("e6", r1, completed, 6, 3_000), runId: "", conversationId: "" }
      yield* database.write({ statements: [insertEvents([instanceNote])] })
      expect((yield* events.list({ conversationId: "" })).map((e) => e.id)).toEqual(["e6"])
      expect((yield* events.list({ conversationId: "c1" })).map((e) => e.id)).toEqual(["e1", "e2", "e4", "e5"])
      expect(yield* events.list({ runId: "r2", after: 5 })).toEqual([])
      expect(yield* events.list({ runId: "r3" })).toEqual([])
    }))

  it.scoped("a step one of whose events the database refuses is refused whole: none of its messages, usage, status or events is stored", () =>
    Effect.gen(function*() {
      const storage = yield* freshStorage(backend)
      const { journal, store } = storage
      yield* TestClock.setTime(1_000)
      const r1 = yield* submit(journal, newRun("r1"), { queuedId: "e1" })
      yield* refuseEvent(storage, "refused")
      const step = (events: ReadonlyArray<string>): Step => ({
        messages: [user, assistant],
        usage: [{ inputTokens: 10, outputTokens: 5, costUsd: 0.25 }],
        status: { status: "running" },
        events: events.map((id) => draft(id, r1, started))
      })
      yield* TestClock.setTime(2_000)
      // The refused event last in its step, then first.
      const last = yield* Effect.flip(journal.record(r1, step(["e2", "refused"])))
      expect(last._tag).toBe("StoreError")
      const first = yield* Effect.flip(journal.record(r1, step(["refused", "e3"])))
      expect(first._tag).toBe("StoreError")

      expect(yield* eventIds(storage)).toEqual([["e1", 1]])
      expect(yield* store.listMessages("c1")).toEqual([])
      expect(yield* store.getRun("r1")).toEqual(Option.some(queuedRecord(newRun("r1"), 1_000)))
    }))

  it.scoped("a second owner is told when the live lease expires, and the lease after it expires, with a bigger token", () =>
    Effect.gen(function*() {
      const { journal } = yield* freshStorage(backend)
      yield* TestClock.setTime(1_000)
      const r1 = yield* submit(journal, newRun("r1"))
      const first = yield* journal.claim(r1, "A", 1_000)
      expect(first).toEqual({ _tag: "Claimed", lease: { conversationId: "c1", owner: "A", token: 1 }, inLine: { status: "queued", ahead: [] } })

      yield* TestClock.setTime(1_500)
      // Held: the answer says when the holder's lease expires unless renewed.
      expect(yield* journal.claim(r1, "B", 1_000)).toEqual({ _tag: "Held", owner: "A", token: 1, expiresAt: 2_000, expiresIn: 500 })
      // Another run of the same conversation is fenced by the same lease.
      const r2 = yield* submit(journal, newRun("r2"), { newConversation: false })
      expect(yield* journal.claim(r2, "B", 1_000)).toEqual({ _tag: "Held", owner: "A", token: 1, expiresAt: 2_000, expiresIn: 500 })

      yield* journal.record(r1, { status: { status: "running" } })
      yield* TestClock.setTime(2_001)
      const taken = yield* journal.claim(r1, "B", 1_000)
      // The status is read in the same transaction as the lease is taken.
      expect(taken).toEqual({ _tag: "Claimed", lease: { conversationId: "c1", owner: "B", token: 2 }, inLine: { status: "running", ahead: [] } })
    }))

  it.scoped("the holder of a conversation's lease reads the runs accepted before its own that have not run yet, in their order", () =>
    Effect.gen(function*() {
      const { journal } = yield* freshStorage(backend)
      yield* TestClock.setTime(1_000)
      const [r1, r2, r3, r4, r5] = yield* Effect.forEach(["r1", "r2", "r3", "r4", "r5"], (id, at) =>
        submit(journal, newRun(id), { newConversation: at === 0 }))
      const other = yield* submit(journal, newRun("o1", { conversationId: "c2" }))
      yield* journal.record(r1!, { status: { status: "completed", output: "done" } })
      yield* journal.record(r2!, { status: { status: "suspended" } })
      // Left running by a process that stopped; r4 queued in another process.
      yield* journal.record(r3!, { status: { status: "running" } })
      expect(yield* journal.claim(r5!, "A", 1_000)).toEqual({
        _tag: "Claimed",
        lease: { conversationId: "c1", owner: "A", token: 1 },
        inLine: { status: "queued", ahead: ["r3", "r4"] }
      })
      expect(yield* journal.inLine(r4!)).toEqual({ status: "queued", ahead: ["r3"] })
      expect(yield* journal.inLine(r1!)).toEqual({ status: "completed", ahead: [] })
      expect(yield* journal.inLine(other)).toEqual({ status: "queued", ahead: [] })
      expect(yield* journal.inLine({ ...other, id: "gone" })).toBeUndefined()
    }))

  it.scoped("submitAndClaim takes a free lease in the submission's one transaction; a held one is left to its holder", () =>
    Effect.gen(function*() {
      const storage = yield* freshStorage(backend)
      const { journal, store } = storage
      const queuing = (run: ReturnType<typeof newRun>, newConversation: boolean) => ({
        newConversation,
        queued: (record: RunRecord) => draft(`queued-${run.id}`, record, { type: "run.queued", data: { input: run.input } })
      })
      yield* TestClock.setTime(1_000)
      const before = yield* transactions(storage)
      const first = yield* journal.submitAndClaim(newRun("r1"), queuing(newRun("r1"), true), { owner: "A", ttlMillis: 1_000 })
      expect(yield* transactions(storage)).toBe(before + 1)
      expect(first).toEqual({ run: queuedRecord(newRun("r1"), 1_000), lease: { conversationId: "c1", owner: "A", token: 1 } })
      expect(Option.map(yield* store.getRun("r1"), (run) => run.status)).toEqual(Option.some("queued"))
      // The lease is A's: B is told so, and the lease fences B's steps.
      expect(yield* journal.claim(first.run, "B", 1_000)).toEqual({ _tag: "Held", owner: "A", token: 1, expiresAt: 2_000, expiresIn: 1_000 })

      // B submits in the same conversation while A holds it: queued, without the lease.
      const second = yield* journal.submitAndClaim(newRun("r2"), queuing(newRun("r2"), false), { owner: "B", ttlMillis: 1_000 })
      expect(second.lease).toBeUndefined()
      expect(Option.map(yield* store.getRun("r2"), (run) => run.status)).toEqual(Option.some("queued"))

      // Released, the next submission takes it with the next token.
      yield* journal.release(first.lease ?? { conversationId: "c1", owner: "A", token: 0 })
      const third = yield* journal.submitAndClaim(newRun("r3"), queuing(newRun("r3"), false), { owner: "B", ttlMillis: 1_000 })
      expect(third.lease).toEqual({ conversationId: "c1", owner: "B", token: 2 })
      // A submission its instance refuses takes neither the run nor the lease.
      yield* journal.release(third.lease ?? { conversationId: "c1", owner: "B", token: 0 })
      yield* storage.instances.apply({ agent: "shop", id: "acme" }, { status: { status: "paused", reason: null, from: "active" }, install: [], uninstall: [] }, [])
      const refused = yield* Effect.flip(journal.submitAndClaim(newRun("r4"), queuing(newRun("r4"), false), { owner: "C", ttlMillis: 1_000 }))
      expect(refused._tag).toBe("InstanceClosed")
      expect(yield* store.getRun("r4")).toEqual(Option.none())
      expect(yield* journal.claim(first.run, "D", 1_000)).toMatchObject({ _tag: "Claimed", lease: { owner: "D", token: 3 } })
    }))

  it.scoped("a step that ends a run without its lease (a cancel) ends it once: of two at once, one is written and the other fails with LeaseLost", () =>
    Effect.gen(function*() {
      const storage = yield* freshStorage(backend)
      const { journal, store } = storage
      yield* TestClock.setTime(1_000)
      const r1 = yield* submit(journal, newRun("r1"), { queuedId: "e1" })
      yield* journal.record(r1, { status: { status: "running" } })
      const cancel = (id: string): Step => ({ events: [draft(id, r1, started)], status: { status: "cancelled" } })
      const outcomes = yield* Effect.all([journal.record(r1, cancel("e2")), journal.record(r1, cancel("e3"))].map(Effect.either), {
        concurrency: "unbounded"
      })
      expect(outcomes.filter((outcome) => outcome._tag === "Right")).toHaveLength(1)
      expect(outcomes.filter((outcome) => outcome._tag === "Left").map((outcome) => outcome._tag === "Left" && outcome.left._tag)).toEqual(["LeaseLost"])
      expect((yield* eventIds(storage)).length).toBe(2)
      expect(Option.map(yield* store.getRun("r1"), (run) => run.status)).toEqual(Option.some("cancelled"))
      // A step that does not end it is not held to that (a run's own steps are fenced by their lease).
      yield* journal.record(r1, { messages: [user] })
      expect((yield* store.listMessages("c1")).map((m) => m.message)).toEqual([user])
    }))

  it.scoped("a step recorded with a stale lease fails with LeaseLost and writes nothing of the step, not even the approval it asks for", () =>
    Effect.gen(function*() {
      const storage = yield* freshStorage(backend)
      const { database, journal, store } = storage
      const approvals = Effect.map(
        database.read({ sql: "SELECT id, tool_call_id, status, created_at, input FROM foundry_approvals ORDER BY id", params: [] }),
        (rows) => rows.map((row) => [row.id, row.tool_call_id, row.status, Number(row.created_at), row.input])
      )
      yield* TestClock.setTime(1_000)
      const r1 = yield* submit(journal, newRun("r1"), { queuedId: "e1" })
      const stale = yield* leaseOf(journal.claim(r1, "A", 1_000))
      yield* TestClock.setTime(2_001)
      const current = yield* leaseOf(journal.claim(r1, "B", 1_000))

      const step = (id: string): Step => ({
        messages: [user],
        events: [draft(id, r1, started)],
        usage: [{ inputTokens: 10, outputTokens: 5, costUsd: 0.25 }],
        approvals: [{ id: `apr-${id}`, runId: "r1", toolCallId: "call_1", agent: "a", tool: "pay", input: { amount: 5 }, expiresAt: 9e12 }],
        status: { status: "running" }
      })
      const lost = yield* Effect.flip(journal.record(r1, step("e2"), stale))
      expect(lost).toEqual(new LeaseLost({ conversationId: "c1", token: 1 }))
      expect(yield* approvals).toEqual([])
      expect(yield* store.listMessages("c1")).toEqual([])
      expect(yield* eventIds(storage)).toEqual([["e1", 1]])
      expect(yield* store.getRun("r1")).toEqual(Option.some(queuedRecord(newRun("r1"), 1_000)))

      // The current holder's step goes through.
      yield* journal.record(r1, step("e3"), current)
      expect(yield* approvals).toEqual([["apr-e3", "call_1", "pending", 2_001, `{"amount":5}`]])
      // Asked again for the same call (the run executed again), the first stays.
      yield* journal.record(r1, { approvals: step("e4").approvals }, current)
      expect(yield* approvals).toEqual([["apr-e3", "call_1", "pending", 2_001, `{"amount":5}`]])
      expect((yield* store.listMessages("c1")).map((m) => m.message)).toEqual([user])
      expect(yield* eventIds(storage)).toEqual([["e1", 1], ["e3", 2]])
      expect(Option.map(yield* store.getRun("r1"), (run) => [run.status, run.startedAt, run.inputTokens])).toEqual(
        Option.some(["running", 2_001, 10])
      )
    }))

  it.scoped("a step of a run that was ended without its lease (a cancel from another process) fails with LeaseLost and its lease is not renewed, though it is current", () =>
    Effect.gen(function*() {
      const storage = yield* freshStorage(backend)
      const { journal, store } = storage
      yield* TestClock.setTime(1_000)
      const r1 = yield* submit(journal, newRun("r1"), { queuedId: "e1" })
      const lease = yield* leaseOf(journal.claim(r1, "A", 60_000))
      // Ended while it was still queued: the canceller saw no executor to fence.
      yield* journal.record(r1, { events: [draft("e2", r1, started)], status: { status: "cancelled" } })

      const lost = yield* Effect.flip(journal.record(r1, { messages: [user], events: [draft("e3", r1, started)], status: { status: "running" } }, lease))
      expect(lost).toEqual(new LeaseLost({ conversationId: "c1", token: 1 }))
      // Nor is the lease renewed for it: its executor is told to stop.
      expect(yield* journal.renew(lease, "r1", 60_000)).toBe("Taken")
      expect(yield* store.listMessages("c1")).toEqual([])
      expect(yield* eventIds(storage)).toEqual([["e1", 1], ["e2", 2]])
      expect(Option.map(yield* store.getRun("r1"), (run) => run.status)).toEqual(Option.some("cancelled"))
    }))

  it.scoped("a live lease whose holder the caller knows to be dead is taken over at once, and fences the dead holder", () =>
    Effect.gen(function*() {
      const { journal, store } = yield* freshStorage(backend)
      yield* TestClock.setTime(1_000)
      const r1 = yield* submit(journal, newRun("r1"))
      const dead = yield* leaseOf(journal.claim(r1, "A", 60_000))
      // Only holders the predicate names are taken over.
      expect(yield* journal.claim(r1, "B", 1_000, (holder) => holder === "C")).toMatchObject({ _tag: "Held", owner: "A" })
      const taken = yield* journal.claim(r1, "B", 1_000, (holder) => holder === "A")
      expect(taken).toEqual({ _tag: "Claimed", lease: { conversationId: "c1", owner: "B", token: 2 }, inLine: { status: "queued", ahead: [] } })
      expect(yield* journal.renew(dead, "r1", 60_000)).toBe("Taken")
      const lost = yield* Effect.flip(journal.record(r1, { messages: [user] }, dead))
      expect(lost).toEqual(new LeaseLost({ conversationId: "c1", token: 1 }))
      expect(yield* store.listMessages("c1")).toEqual([])
    }))

  it.scoped("the conversations of unfinished runs no live executor holds are taken over in one write: a live or vouched-for holder's are left alone", () =>
    Effect.gen(function*() {
      const storage = yield* freshStorage(backend)
      const { journal } = storage
      yield* TestClock.setTime(1_000)
      const runs = yield* Effect.forEach(["c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"], (conversationId, at) =>
        submit(journal, newRun(`r${at + 1}`, { conversationId })))
      const claimAs = (at: number, owner: string, ttl: number) => leaseOf(journal.claim(runs[at]!, owner, ttl))
      const dead = yield* claimAs(0, "dead", 60_000)
      yield* claimAs(1, "alive", 60_000)
      yield* claimAs(2, "alive", 500)
      yield* claimAs(3, "remote", 500)
      yield* claimAs(4, "remote", 60_000)
      // c6: never leased (queued by a process that did not claim it).
      yield* claimAs(6, "dead", 60_000)
      const ended = yield* claimAs(7, "dead", 60_000)
      yield* journal.record(runs[7]!, { status: { status: "completed", output: "done" } }, ended)
      yield* claimAs(8, "B", 500)
      yield* TestClock.setTime(2_000)

      const before = yield* transactions(storage)
      const holders = { dead: (holder: string) => holder === "dead", alive: (holder: string) => holder === "alive" }
      const adopting = (here: (conversationId: string) => boolean) => ({ holders, here, wakes: () => true, starting: false })
      const taken = yield* journal.takeOverStranded("B", 1_000, adopting((conversationId) => conversationId === "c7"))
      expect(yield* transactions(storage)).toBe(before + 1)
      // A dead holder's live lease, an expired one nobody vouches for, none at all, and B's own
      // given up with no run of its conversation here (queued by a process that stopped while B
      // held it); not c2, c3 (a live holder's, even expired), c5 (live), c7 (busy here) or c8 (its run ended).
      expect([...taken.conversations].sort()).toEqual(["c1", "c4", "c6", "c9"])
      expect(taken.suspended).toEqual([])
      expect(yield* journal.renew(dead, "r1", 60_000)).toBe("Taken")
      for (const at of [0, 3, 5, 8]) expect(yield* journal.claim(runs[at]!, "B", 1_000)).toMatchObject({ _tag: "Claimed", lease: { owner: "B" } })
      expect(yield* journal.claim(runs[2]!, "C", 1_000)).toMatchObject({ _tag: "Claimed", lease: { owner: "C" } })
      // B's leases held now are not looked at again.
      expect(yield* journal.takeOverStranded("B", 1_000, adopting(() => false))).toEqual({ conversations: ["c7"], suspended: [] })
    }))

  it.scoped("suspended runs that wait on nothing are taken over with their conversation when its last holder is dead or there was none", () =>
    Effect.gen(function*() {
      const storage = yield* freshStorage(backend)
      const { journal } = storage
      yield* TestClock.setTime(1_000)
      /** A run of conversation `d<n>` suspended by `holder` (released, as a suspension does), or by no one. */
      const suspendedBy = (n: number, holder: string | undefined, agent = "shop") =>
        Effect.gen(function*() {
          const run = yield* submit(journal, newRun(`s${n}`, { conversationId: `d${n}`, agent }))
          const lease = holder === undefined ? undefined : yield* leaseOf(journal.claim(run, holder, 500))
          yield* journal.record(run, { status: { status: "suspended" }, releaseLease: true }, lease)
          return run
        })
      const s1 = yield* suspendedBy(1, "dead")
      yield* suspendedBy(2, "alive")
      yield* suspendedBy(3, "remote")
      yield* suspendedBy(4, "dead")
      // s4 waits for its child, still queued (in a conversation a live process holds).
      const child = yield* submit(journal, { ...newRun("k4", { conversationId: "dk4" }), parentRunId: "s4", parentToolCallId: "call_1" })
      yield* leaseOf(journal.claim(child, "alive", 60_000))
      // s10 waits on a pending approval (s11's approval is decided).
      const approval = (runId: string, status: string) => ({
        sql: `INSERT INTO foundry_approvals (id, run_id, tool_call_id, agent, tool, input, status, created_at, expires_at)
          VALUES (?, ?, 'call_1', 'shop', 'pay', '{}', ?, 1000, 90000)`,
        params: [`apr-${runId}`, runId, status]
      })
      yield* suspendedBy(10, "dead")
      const s11 = yield* suspendedBy(11, "dead")
      yield* storage.database.write({ statements: [approval("s10", "pending"), approval("s11", "approved")] })
      yield* suspendedBy(5, "dead", "left-out")
      yield* suspendedBy(6, "dead")
      const s7 = yield* suspendedBy(7, undefined)
      yield* suspendedBy(8, "B")
      // d9: a suspended run and a queued one behind it, in one conversation.
      const s9 = yield* suspendedBy(9, "dead")
      yield* submit(journal, newRun("q9", { conversationId: "d9" }), { newConversation: false })
      yield* TestClock.setTime(2_000)

      const before = yield* transactions(storage)
      const holders = { dead: (holder: string) => holder === "dead", alive: (holder: string) => holder === "alive" }
      const adopting = (starting: boolean) => ({
        holders,
        here: (conversationId: string) => conversationId === "d6",
        wakes: (agent: string) => agent !== "left-out",
        starting
      })
      const taken = yield* journal.takeOverStranded("B", 1_000, adopting(false))
      expect(yield* transactions(storage)).toBe(before + 1)
      // Not s2 (a live holder's), s3 (a holder nobody can look at: expiry says nothing of a released
      // lease), s4 (its child goes on), s5 (this build leaves its agent out), s6 (busy here), s8 (B's
      // own) or s10 (a person has not decided).
      expect(taken.conversations).toEqual(["d9"])
      expect([...taken.suspended].sort()).toEqual(["s1", "s11", "s7", "s9"])
      for (const run of [s1, s7, s9, s11]) expect(yield* journal.claim(run, "C", 1_000)).toMatchObject({ _tag: "Held", owner: "B" })
      // As an executor starts, whoever held them last: s2 and s3 too (a holder that went on running
      // would have woken them), never one held now or one still waiting.
      const s12 = yield* suspendedBy(12, "alive")
      yield* leaseOf(journal.claim(s12, "alive", 60_000))
      expect([...(yield* journal.takeOverStranded("C", 1_000, adopting(true))).suspended].sort()).toEqual(["s2", "s3", "s8"])
    }))

  it.scoped("a suspended run nobody woke ten lease lifetimes after its approval was decided or its child ended is taken over, whoever suspended it, once, though its events were pruned", () =>
    Effect.gen(function*() {
      const storage = yield* freshStorage(backend)
      const { journal } = storage
      yield* TestClock.setTime(1_000)
      type Suspension = Extract<EventContent, { readonly type: "run.suspended" }>["data"]
      const forApproval = (n: number): Suspension => ({ reason: "approval", approvalId: `apr-s${n}`, tool: "pay" })
      const forBuild: Suspension = { reason: "build", file: "agents/shop/agent.ts", problem: "half saved" }
      /** `run` suspended by `holder`, its lease released and its `run.suspended` event written as the loop does (none: deleted since). */
      const suspend = (run: RunRecord, holder: string, data: Suspension | null) =>
        Effect.gen(function*() {
          const lease = yield* leaseOf(journal.claim(run, holder, 500))
          const events = data === null ? [] : [draft(`suspended-${run.id}-${yield* TestClock.currentTimeMillis}`, run, { type: "run.suspended", data })]
          yield* journal.record(run, { status: { status: "suspended" }, events, releaseLease: true }, lease)
          return run
        })
      const suspendedBy = (n: number, holder: string, data: Suspension | null = forApproval(n)) =>
        Effect.flatMap(submit(journal, newRun(`s${n}`, { conversationId: `d${n}` })), (run) => suspend(run, holder, data))
      const childOf = (parent: string) =>
        Effect.gen(function*() {
          const child = yield* submit(journal, { ...newRun(`k-${parent}`, { conversationId: `dk-${parent}` }), parentRunId: parent, parentToolCallId: "call_1" })
          const lease = yield* leaseOf(journal.claim(child, "remote", 60_000))
          return journal.record(child, { status: { status: "completed", output: "done" }, releaseLease: true }, lease)
        })
      const decided = (runId: string, at: number) => ({
        sql: `INSERT INTO foundry_approvals (id, run_id, tool_call_id, agent, tool, input, status, created_at, expires_at, decided_at)
          VALUES (?, ?, 'call_1', 'shop', 'pay', '{}', 'approved', 1000, 90000, ?)`,
        params: [`apr-${runId}`, runId, at]
      })
      // Decided at 1,500 and at 2,500, by a process that died before it woke them: s1 suspended by
      // a holder on another host, s2 by a live one, s3 (decided late) by another host's.
      const s1 = yield* suspendedBy(1, "remote")
      const s2 = yield* suspendedBy(2, "alive")
      yield* suspendedBy(3, "remote")
      // s4: its child ends at 1,500 (the child's executor died before it woke the parent).
      const s4 = yield* suspendedBy(4, "remote", { reason: "child", childRunId: "k-s4", tool: "delegate" })
      const endChild4 = yield* childOf("s4")
      // s5: decided at 1,500 and its lease held again since (being resumed).
      const s5 = yield* suspendedBy(5, "remote")
      // s6: waits on nothing and nothing came to pass (a build with its agent, in a `foundry dev`).
      yield* suspendedBy(6, "remote", forBuild)
      // s7: decided at 1,500, resumed, and suspended again at 1,600 for a build with its agent; s9:
      // its child ended at 1,500, suspended again at 1,600 for a build.
      const s7 = yield* suspendedBy(7, "remote")
      const s9 = yield* suspendedBy(9, "remote", { reason: "child", childRunId: "k-s9", tool: "delegate" })
      const endChild9 = yield* childOf("s9")
      // s8: decided at 1,500, suspended without an event.
      const s8 = yield* suspendedBy(8, "remote", null)
      yield* TestClock.setTime(1_500)
      yield* endChild4
      yield* endChild9
      yield* storage.database.write({ statements: ["s1", "s2", "s5", "s7", "s8"].map((runId) => decided(runId, 1_500)).concat(decided("s3", 2_500)) })
      yield* leaseOf(journal.claim(s5, "remote", 60_000))
      yield* TestClock.setTime(1_600)
      yield* suspend(s7, "remote", forBuild)
      yield* suspend(s9, "remote", forBuild)

      // Every event pruned by retention: when each run was last suspended or resumed is on its row.
      expect(yield* storage.events.prune({ olderThan: 2_000 })).toBeGreaterThan(0)
      expect(yield* storage.events.list({})).toEqual([])

      const holders = { dead: () => false, alive: (holder: string) => holder === "alive" }
      const adopting = { holders, here: () => false, wakes: () => true, starting: false }
      // Ten lease lifetimes (100 each) after 1,500 have not passed yet: the process that decided may wake them.
      yield* TestClock.setTime(2_400)
      expect(yield* journal.takeOverStranded("B", 100, adopting)).toEqual({ conversations: [], suspended: [] })
      yield* TestClock.setTime(3_000)
      const taken = yield* journal.takeOverStranded("B", 100, adopting)
      expect([...taken.suspended].sort()).toEqual(["s1", "s2", "s4", "s8"])
      for (const run of [s1, s2, s4, s8]) expect(yield* journal.claim(run, "C", 100)).toMatchObject({ _tag: "Held", owner: "B" })
      // s3 in its turn; the runs B took are B's, though their leases expired unrenewed (B has them
      // in line behind others): not taken again.
      yield* TestClock.setTime(3_600)
      expect((yield* journal.takeOverStranded("C", 100, adopting)).suspended).toEqual(["s3"])
      yield* TestClock.setTime(9_000)
      expect(yield* journal.takeOverStranded("D", 100, adopting)).toEqual({ conversations: [], suspended: [] })
    }))

  it.scoped("after a release another owner claims at once; renew extends a live lease, and one released here it leaves alone", () =>
    Effect.gen(function*() {
      const storage = yield* freshStorage(backend)
      const { journal } = storage
      yield* TestClock.setTime(1_000)
      const r1 = yield* submit(journal, newRun("r1"))
      const a = yield* leaseOf(journal.claim(r1, "A", 1_000))

      yield* TestClock.setTime(1_500)
      expect(yield* journal.renew(a, "r1", 5_000)).toBe("Renewed")
      // Past the first expiry, the renewed lease still holds.
      yield* TestClock.setTime(3_000)
      expect(yield* journal.claim(r1, "B", 1_000)).toEqual({ _tag: "Held", owner: "A", token: 1, expiresAt: 6_500, expiresIn: 3_500 })

      yield* journal.release(a)
      const b = yield* leaseOf(journal.claim(r1, "B", 1_000))
      expect(b).toEqual({ conversationId: "c1", owner: "B", token: 2 })
      // Released here: nothing to renew, and nothing was taken from its holder.
      expect(yield* journal.renew(a, "r1", 5_000)).toBe("Released")
      expect(yield* journal.renew(b, "r1", 5_000)).toBe("Renewed")

      // A step that releases the lease releases it once: a release after it writes nothing.
      yield* journal.record(r1, { status: { status: "completed", output: "done" }, releaseLease: true }, b)
      const before = yield* transactions(storage)
      yield* journal.release(b)
      expect(yield* journal.renew(b, "r1", 5_000)).toBe("Released")
      expect(yield* transactions(storage)).toBe(before)
      expect(yield* journal.claim(r1, "C", 1_000)).toMatchObject({ _tag: "Claimed", lease: { token: 3 }, inLine: { status: "completed", ahead: [] } })
    }))

  it.scoped("a renewal in the same transaction as the step that releases the lease (the run's end, its suspension) says Released and holds nothing again", () =>
    Effect.gen(function*() {
      const { journal } = yield* freshStorage(backend)
      yield* TestClock.setTime(1_000)
      for (const [id, status] of [["r1", { status: "completed", output: "done" }], ["r2", { status: "suspended" }]] as const) {
        const run = yield* submit(journal, newRun(id, { conversationId: `c-${id}` }))
        const lease = yield* leaseOf(journal.claim(run, "A", 3_000))
        // Both written by one group commit, the step first: the renewal finds the lease released.
        const [, renewal] = yield* Effect.all([journal.record(run, { status, releaseLease: true }, lease), journal.renew(lease, id, 3_000)], {
          concurrency: "unbounded"
        })
        expect(["Renewed", "Released"]).toContain(renewal)
        expect(yield* journal.claim(run, "B", 3_000)).toMatchObject({ _tag: "Claimed", lease: { owner: "B", token: 2 } })
      }
    }))

  it.scoped("a lease the run's suspension released is not renewed after it: the next claim has it at once", () =>
    Effect.gen(function*() {
      const { journal } = yield* freshStorage(backend)
      yield* TestClock.setTime(1_000)
      const r1 = yield* submit(journal, newRun("r1"))
      const lease = yield* leaseOf(journal.claim(r1, "A", 3_000))
      yield* journal.record(r1, { status: { status: "suspended" }, releaseLease: true }, lease)
      // The holder's renewal comes before it lets the lease go: it must not hold the conversation again.
      expect(yield* journal.renew(lease, "r1", 3_000)).toBe("Released")
      expect(yield* journal.claim(r1, "B", 3_000)).toMatchObject({ _tag: "Claimed", lease: { owner: "B", token: 2 } })
    }))

  it.scoped("steps recorded by several fibers at once share write transactions", () =>
    Effect.gen(function*() {
      const storage = yield* freshStorage(backend)
      const { journal, store } = storage
      const ids = Array.from({ length: 20 }, (_, i) => `r${i + 1}`)
      const runs = yield* Effect.forEach(ids, (id) => submit(journal, newRun(id, { conversationId: `c-${id}` })))
      const before = yield* transactions(storage)
      yield* Effect.forEach(
        runs,
        (run) => journal.record(run, { messages: [user], events: [draft(`started-${run.id}`, run, started)], status: { status: "running" } }),
        { concurrency: "unbounded" }
      )
      const written = (yield* transactions(storage)) - before
      expect(written).toBeGreaterThanOrEqual(1)
      expect(written).toBeLessThan(runs.length)
      for (const run of runs) {
        expect((yield* store.listMessages(run.conversationId)).map((m) => m.runId)).toEqual([run.id])
        expect(Option.map(yield* store.getRun(run.id), (r) => r.status)).toEqual(Option.some("running"))
      }
    }))

  it.scoped("a step that fails in a shared transaction fails alone: the other steps of the batch are written", () =>
    Effect.gen(function*() {
      const storage = yield* freshStorage(backend)
      const { journal, store } = storage
      const ids = Array.from({ length: 20 }, (_, i) => `r${i + 1}`)
      const runs = yield* Effect.forEach(ids, (id) => submit(journal, newRun(id, { conversationId: `c-${id}` })))
      yield* refuseEvent(storage, "started-r10")
      const before = yield* transactions(storage)
      // The database refuses r10's event, so its step's insert fails.
      const outcomes = yield* Effect.forEach(
        runs,
        (run) =>
          Effect.either(journal.record(run, {
            messages: [user],
            events: [draft(`started-${run.id}`, run, started)],
            status: { status: "running" }
          })),
        { concurrency: "unbounded" }
      )
      expect((yield* transactions(storage)) - before).toBeLessThan(runs.length - 1)
      expect(outcomes.map((o, i) => [ids[i], Either.isRight(o)])).toEqual(ids.map((id) => [id, id !== "r10"]))
      const refused = outcomes[ids.indexOf("r10")]
      expect(refused !== undefined && Either.isLeft(refused) ? refused.left._tag : "written").toBe("StoreError")
      for (const [index, run] of runs.entries()) {
        const stored = run.id !== "r10"
        expect((yield* store.listMessages(run.conversationId)).length).toBe(stored ? 1 : 0)
        expect(Option.map(yield* store.getRun(run.id), (r) => r.status)).toEqual(Option.some(stored ? "running" : "queued"))
        const listed = yield* storage.events.list({ runId: run.id })
        expect(listed.length).toBe(stored ? 2 : 1)
        // Each written step was told the seq its event was stored with, the refused step's
        // savepoint rolled back between them.
        const outcome = outcomes[index]
        if (outcome !== undefined && Either.isRight(outcome)) expect(outcome.right).toEqual(listed.slice(1))
      }
    }))

  it.scoped("runs, messages, events and leases survive closing and reopening the store", () =>
    Effect.gen(function*() {
      const place = yield* backend.fresh
      yield* TestClock.setTime(1_000)
      const lease = yield* Effect.scoped(
        Effect.gen(function*() {
          const { journal, instances } = yield* open(place)
          yield* instances.ensure("shop", "acme", { plan: "pro" })
          const r1 = yield* submit(journal, newRun("r1"), { queuedId: "e1" })
          const claimed = yield* leaseOf(journal.claim(r1, "A", 10_000))
          yield* journal.record(r1, { messages: [user], status: { status: "running" }, events: [draft("e2", r1, started)] }, claimed)
          yield* journal.record(r1, { messages: [assistant] }, claimed)
          return claimed
        })
      )

      yield* TestClock.setTime(2_000)
      const storage = yield* open(place)
      const { journal, store, instances } = storage
      expect(yield* instances.ensure("shop", "acme", { plan: "free" })).toEqual(
        new InstanceRecord({ id: "acme", agent: "shop", context: { plan: "pro" }, provisioningKey: null, status: "active", statusReason: null, createdAt: 1_000, updatedAt: 1_000 })
      )
      expect(yield* store.getConversation("c1")).toEqual(
        Option.some(new ConversationRecord({ id: "c1", agent: "shop", instanceId: "acme", createdAt: 1_000, updatedAt: 1_000 }))
      )
      const running = new RunRecord({ ...queuedRecord(newRun("r1"), 1_000), status: "running", startedAt: 1_000 })
      expect(yield* store.getRun("r1")).toEqual(Option.some(running))
      expect(yield* store.unfinishedRuns).toEqual([running])

      // The lease is still A's: B is refused, A's steps are still accepted.
      expect(yield* journal.claim(running, "B", 10_000)).toMatchObject({ _tag: "Held", owner: "A", expiresAt: 11_000 })
      // Numbering continues where it stopped.
      const [next] = yield* journal.record(running, { messages: [tool], events: [draft("e3", running, completed)] }, lease)
      expect(next?.seq).toBe(3)
      expect((yield* store.listMessages("c1")).map((m) => [m.seq, m.message])).toEqual([[1, user], [2, assistant], [3, tool]])
      expect(yield* eventIds(storage, "r1")).toEqual([["e1", 1], ["e2", 2], ["e3", 3]])
    }))
}

for (const backend of backends) {
  describe.skipIf(backend.skip)(`the run journal on ${backend.name}`, () => journalTests(backend))
}
