import { tmpdir } from "node:os"
import { join } from "node:path"
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as Scripted from "../../src/models/scripted.js"
import { durableProject, plan } from "../support/durableProject.js"
import { allEvents, type EventBody, readFrames } from "../support/eventFeed.js"
import { plannedModel } from "../support/plannedModel.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const setup = (config = "", model = plannedModel) =>
  Effect.gen(function*() {
    const log = join(tmpdir(), `foundry-events-${randomUUID()}.log`)
    const root = yield* tempProject(durableProject(log, config))
    return yield* startServer(root, { model })
  })

const submit = (url: string, agent: string, message: string) =>
  Effect.map(http(`${url}/api/runs`, { body: { agent, message } }), (r) => r.json as { runId: string })

/** An agent with one tool, `pay`, whose file each test writes. */
const shopWithPay = `import { defineAgent } from "foundry"
import pay from "./tools/pay.tool.js"
export default defineAgent({ description: "Shop", tools: [pay] })
`

describe("correlation", () => {
  it.scopedLive("a run that calls a tool, spawns a child and waits on an approval yields events that rebuild the exact tree", () =>
    Effect.gen(function*() {
      const server = yield* setup()
      const parent = yield* submit(server.url, "lead", plan({
        calls: [
          { name: "note", arguments: { message: plan({ calls: [{ name: "record", arguments: { line: "spawned" } }] }) } },
          { name: "ask-worker", arguments: { message: plan({ calls: [{ name: "transfer", arguments: { amount: 1 } }] }) } }
        ]
      }))
      let approvalId: string | undefined
      for (let i = 0; i < 400 && approvalId === undefined; i++) {
        const pending = (yield* http(`${server.url}/api/approvals?status=pending`)).json as Array<{ id: string }>
        approvalId = pending[0]?.id
        if (approvalId === undefined) yield* Effect.sleep("20 millis")
      }
      yield* http(`${server.url}/api/approvals/${approvalId}`, { body: { decision: "approve" } })
      yield* waitForRun(server.url, parent.runId)
      const runs = (yield* http(`${server.url}/api/runs?agent=worker`)).json as Array<{ id: string; input: string }>
      const spawned = runs.find((r) => r.input.includes("spawned"))!
      const child = runs.find((r) => r.input.includes("transfer"))!
      yield* waitForRun(server.url, spawned.id)

      const events = yield* allEvents(server.url)
      const root = events.find((e) => e.runId === parent.runId && e.type === "run.started")!
      expect(root.parentSpanId).toBeNull()
      // One trace for the whole tree.
      expect(new Set(events.map((e) => e.traceId))).toEqual(new Set([root.traceId]))

      const span = (runId: string, type: string, where: (e: EventBody) => boolean = () => true) =>
        events.find((e) => e.runId === runId && e.type === type && where(e))!
      const noteCall = span(parent.runId, "tool.call.started", (e) => e.data.tool === "note")
      const askCall = span(parent.runId, "tool.call.started", (e) => e.data.tool === "ask-worker")
      const firstTurn = span(parent.runId, "model.turn.started")
      const childRoot = span(child.id, "run.started")
      const spawnedRoot = span(spawned.id, "run.started")
      const transferCall = span(child.id, "tool.call.started", (e) => e.data.tool === "transfer")
      const approval = span(child.id, "approval.requested")

      expect(firstTurn.parentSpanId).toBe(root.spanId)
      expect(noteCall.parentSpanId).toBe(root.spanId)
      expect(askCall.parentSpanId).toBe(root.spanId)
      expect(spawnedRoot.parentSpanId).toBe(noteCall.spanId)
      expect(childRoot.parentSpanId).toBe(askCall.spanId)
      expect(transferCall.parentSpanId).toBe(childRoot.spanId)
      expect(approval.parentSpanId).toBe(transferCall.spanId)
      expect(span(child.id, "approval.decided").spanId).toBe(approval.spanId)
      // Every span's parent is a span of the tree.
      const spans = new Set(events.map((e) => e.spanId))
      for (const event of events) if (event.parentSpanId !== null) expect(spans.has(event.parentSpanId)).toBe(true)
    }))
})

describe("the event stream", () => {
  it.scopedLive("a client that reconnects with Last-Event-ID receives every missed event once, in order", () =>
    Effect.gen(function*() {
      const server = yield* setup()
      const first = yield* submit(server.url, "worker", plan({ calls: [{ name: "record", arguments: { line: "a" } }] }))
      yield* waitForRun(server.url, first.runId)
      const before = yield* readFrames(server.url, {}, (ids) => ids.length >= 4, "?after=0")
      const lastSeen = before.ids[3]!
      const second = yield* submit(server.url, "worker", plan({ calls: [{ name: "record", arguments: { line: "b" } }] }))
      yield* waitForRun(server.url, second.runId)
      const stored = (yield* allEvents(server.url)).map((e) => e.seq).filter((seq) => seq > lastSeen)
      const resumed = yield* readFrames(server.url, { "last-event-id": String(lastSeen) }, (ids) => ids.length >= stored.length)
      expect(resumed.ids).toEqual(stored)
      expect(new Set(resumed.ids).size).toBe(resumed.ids.length)
      expect(resumed.types.filter((t) => t === "run.completed")).toHaveLength(2)

      // A Last-Event-ID that is no seq is refused, not taken as "from now".
      const malformed = yield* http(`${server.url}/api/events`, { headers: { accept: "text/event-stream", "last-event-id": "abc" } })
      expect(malformed.status).toBe(400)
      expect(malformed.json).toMatchObject({ _tag: "BadRequest", issues: [{ path: "Last-Event-ID" }] })
    }))

  it.scopedLive("a client resuming after a number its server's store has not reached (the store started over) gets every event of this store", () =>
    Effect.gen(function*() {
      const server = yield* setup()
      const run = yield* submit(server.url, "worker", plan({ calls: [{ name: "record", arguments: { line: "a" } }] }))
      yield* waitForRun(server.url, run.runId)
      const stored = (yield* allEvents(server.url)).map((e) => e.seq)
      // What the client saw came from the store before (numbered further than this one has come).
      const resumed = yield* readFrames(server.url, { "last-event-id": String(stored[stored.length - 1]! + 1000) }, (ids) => ids.length >= stored.length)
      expect(resumed.ids).toEqual(stored)
      const afterQuery = yield* readFrames(server.url, {}, (ids) => ids.length >= stored.length, `?after=${stored[stored.length - 1]! + 1}`)
      expect(afterQuery.ids).toEqual(stored)
    }))

  it.scopedLive("a live stream asked for without text deltas carries a run's events but not its answer's words; one without the option, those too", () =>
    Effect.gen(function*() {
      const server = yield* setup()
      const ended = (_ids: ReadonlyArray<number>, types: ReadonlyArray<string>) => types.includes("run.completed")
      const withoutText = yield* Effect.fork(readFrames(server.url, {}, ended, "?deltas=false"))
      const withText = yield* Effect.fork(readFrames(server.url, {}, ended))
      yield* Effect.sleep("300 millis")
      // The answer takes a moment, as a model's over the network does: one that answers at once
      // has its text carried whole by its turn's end (docs/decisions.md, "A turn's call results go
      // with the next model turn"). Half a second, so that a loaded machine's stalled event loop
      // (20 ms was once outlasted in CI) cannot make it an answer at once.
      const run = yield* submit(server.url, "worker", plan({ calls: [{ name: "record", arguments: { line: "a" } }], say: "one two three", finalDelay: 500 }))
      yield* waitForRun(server.url, run.runId)
      const plain = yield* Fiber.join(withoutText).pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("no run.completed") }))
      const full = yield* Fiber.join(withText).pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("no run.completed") }))
      expect(full.every).toContain("model.delta")
      expect(plain.every).not.toContain("model.delta")
      // Everything else alike.
      expect(plain.every).toEqual(full.every.filter((type) => type !== "model.delta"))
      expect(plain.every).toContain("tool.call.completed")
      // A value that is no boolean is refused, saying what it takes.
      const refused = yield* http(`${server.url}/api/events?deltas=no`)
      expect(refused.status).toBe(400)
    }))

  it.scopedLive("a live stream with the text deltas of one conversation carries that conversation's answers' words, not another's, and every other event", () =>
    Effect.gen(function*() {
      const server = yield* setup()
      const first = (yield* http(`${server.url}/api/runs`, { body: { agent: "worker", message: plan({ calls: [] }) } })).json as { runId: string; conversationId: string }
      yield* waitForRun(server.url, first.runId)
      const ended = (_ids: ReadonlyArray<number>, types: ReadonlyArray<string>) => types.filter((type) => type === "run.completed").length >= 2
      const ofIt = yield* Effect.fork(readFrames(server.url, {}, ended, `?deltasOf=${first.conversationId}`))
      const ofAnother = yield* Effect.fork(readFrames(server.url, {}, ended, "?deltasOf=conv_another"))
      yield* Effect.sleep("300 millis")
      // One run in that conversation, one in a new one.
      // The answer takes a moment, as in the test above.
      const words = plan({ calls: [{ name: "record", arguments: { line: "a" } }], say: "one two three", finalDelay: 500 })
      const inIt = (yield* http(`${server.url}/api/runs`, { body: { agent: "worker", message: words, conversation: first.conversationId } })).json as { runId: string }
      yield* waitForRun(server.url, inIt.runId)
      const elsewhere = yield* submit(server.url, "worker", words)
      yield* waitForRun(server.url, elsewhere.runId)
      const its = yield* Fiber.join(ofIt).pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("no second run.completed") }))
      const another = yield* Fiber.join(ofAnother).pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("no second run.completed") }))
      expect(another.every).not.toContain("model.delta")
      // The words of the run in that conversation, before the second run's start.
      const deltas = its.every.flatMap((type, index) => type === "model.delta" ? [index] : [])
      expect(deltas.length).toBeGreaterThan(0)
      expect(Math.max(...deltas)).toBeLessThan(its.every.indexOf("run.completed"))
      expect(another.every).toEqual(its.every.filter((type) => type !== "model.delta"))
    }))

  it.scopedLive("a client that reconnects to a run's stream with Last-Event-ID gets the rest of the run, not all of it again", () =>
    Effect.gen(function*() {
      const server = yield* setup()
      const run = yield* submit(server.url, "worker", plan({ calls: [{ name: "record", arguments: { line: "a" } }] }))
      yield* waitForRun(server.url, run.runId)
      const path = `/api/runs/${run.runId}/events`
      const whole = yield* readFrames(server.url, {}, () => false, "", path)
      expect(whole.types[whole.types.length - 1]).toBe("run.completed")
      const lastSeen = whole.ids[3]!
      const rest = yield* readFrames(server.url, { "last-event-id": String(lastSeen) }, () => false, "", path)
      expect(rest.ids).toEqual(whole.ids.slice(4))
      const past = yield* readFrames(server.url, { "last-event-id": String(whole.ids[whole.ids.length - 1]) }, () => false, "", path)
      expect(past.ids).toEqual([])
      const malformed = yield* http(`${server.url}${path}`, { headers: { accept: "text/event-stream", "last-event-id": "x" } })
      expect(malformed.status).toBe(400)
    }))

  it.scopedLive("pages through events with a seq cursor and filters", () =>
    Effect.gen(function*() {
      const server = yield* setup()
      const run = yield* submit(server.url, "worker", plan({ calls: [{ name: "record", arguments: { line: "a" } }] }))
      yield* waitForRun(server.url, run.runId)
      const first = (yield* http(`${server.url}/api/events?runId=${run.runId}&limit=3`)).json as { events: Array<EventBody>; nextAfter: number }
      expect(first.events.map((e) => e.type)).toEqual(["run.queued", "run.started", "model.turn.started"])
      const next = (yield* http(`${server.url}/api/events?runId=${run.runId}&limit=3&after=${first.nextAfter}`)).json as {
        events: Array<EventBody>
      }
      expect(next.events[0]?.seq).toBeGreaterThan(first.nextAfter)
      const tools = (yield* http(`${server.url}/api/events?type=tool.call.completed`)).json as { events: Array<EventBody> }
      expect(tools.events.map((e) => e.data.tool)).toEqual(["record"])
    }))

  it.scopedLive("order=newest pages the latest events first, and back with before", () =>
    Effect.gen(function*() {
      const server = yield* setup()
      for (const line of ["a", "b", "c"]) {
        const run = yield* submit(server.url, "worker", plan({ calls: [{ name: "record", arguments: { line } }] }))
        yield* waitForRun(server.url, run.runId)
      }
      const oldest = yield* allEvents(server.url, "&type=tool.call.completed")
      const lines = (events: ReadonlyArray<EventBody>) => events.map((e) => (e.data.input as { line: string }).line)
      expect(lines(oldest)).toEqual(["a", "b", "c"])
      const latest = (yield* http(`${server.url}/api/events?type=tool.call.completed&order=newest&limit=2`)).json as {
        events: Array<EventBody>
        nextBefore: number
        nextAfter?: number
      }
      expect(lines(latest.events)).toEqual(["c", "b"])
      expect(latest.nextAfter).toBeUndefined()
      const older = (yield* http(`${server.url}/api/events?type=tool.call.completed&order=newest&limit=2&before=${latest.nextBefore}`)).json as {
        events: Array<EventBody>
        nextBefore?: number
      }
      expect(lines(older.events)).toEqual(["a"])
      expect(older.nextBefore).toBeUndefined()
    }))
})

describe("retention and redaction", () => {
  it.scopedLive("keeps only the newest events when a count is set", () =>
    Effect.gen(function*() {
      const server = yield* setup(`{ events: { retention: { maxCount: 4 }, pruneEvery: "50 millis" } }`)
      const run = yield* submit(server.url, "worker", plan({ calls: [{ name: "record", arguments: { line: "a" } }] }))
      yield* waitForRun(server.url, run.runId)
      yield* Effect.sleep("300 millis")
      const events = yield* allEvents(server.url)
      expect(events.length).toBeLessThanOrEqual(4)
      expect(events.at(-1)?.type).toBe("run.completed")
      // Following the run gives what is left of it, up to its end event, and ends there.
      const stream = yield* Effect.promise(() =>
        fetch(`${server.url}/api/runs/${run.runId}/events`, { headers: { accept: "text/event-stream" } }).then((r) => r.text())
      )
      const types = [...stream.matchAll(/^event: (.+)$/gm)].map((match) => match[1])
      expect(types).toEqual(events.filter((event) => event.runId === run.runId).map((event) => event.type))
      expect(types.at(-1)).toBe("run.completed")
    }))

  it.scopedLive("drops events older than the maximum age", () =>
    Effect.gen(function*() {
      const server = yield* setup(`{ events: { retention: { maxAge: "200 millis" }, pruneEvery: "50 millis" } }`)
      const run = yield* submit(server.url, "worker", plan({ calls: [{ name: "record", arguments: { line: "a" } }] }))
      yield* waitForRun(server.url, run.runId)
      yield* Effect.sleep("600 millis")
      expect(yield* allEvents(server.url)).toEqual([])
      // The run itself is not an event: it stays.
      expect((yield* http(`${server.url}/api/runs/${run.runId}`)).json).toMatchObject({ status: "completed" })
      const stream = yield* Effect.promise(() => fetch(`${server.url}/api/runs/${run.runId}/events`, { headers: { accept: "text/event-stream" } }).then((r) => r.text()))
      expect(stream).toBe("")
    }))

  it.scopedLive("fields a tool marks as redacted never appear in events, while the tool gets them", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/shop/agent.ts": shopWithPay,
        "agents/shop/tools/pay.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
export default defineTool({
  description: "Pay with a card",
  input: Schema.Struct({ cardNumber: Schema.String, amount: Schema.Number }),
  output: Schema.Struct({ last4: Schema.String, token: Schema.String }),
  redact: ["cardNumber", "token"],
  run: ({ cardNumber }) => Effect.succeed({ last4: cardNumber.slice(-4), token: "tok_secret_" + cardNumber })
})
`
      })
      const model = Scripted.make([
        { toolCalls: [{ name: "pay", arguments: { cardNumber: "4111111111111111", amount: 12 } }] },
        { text: "paid" }
      ])
      const server = yield* startServer(root, { model })
      const run = yield* submit(server.url, "shop", "pay for my order")
      yield* waitForRun(server.url, run.runId)
      const text = (yield* http(`${server.url}/api/events?runId=${run.runId}&limit=1000`)).text
      expect(text).not.toContain("4111111111111111")
      expect(text).not.toContain("tok_secret")
      expect(text).toContain("[redacted]")
      const completed = ((yield* http(`${server.url}/api/events?runId=${run.runId}&type=tool.call.completed`)).json as {
        events: Array<EventBody>
      }).events[0]
      expect(completed?.data).toMatchObject({ input: { cardNumber: "[redacted]", amount: 12 }, output: { last4: "1111", token: "[redacted]" } })
    }))

  it.scopedLive("a redacted field stays out of events when the call's arguments are not JSON or do not match, while the model is told", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/shop/agent.ts": shopWithPay,
        "agents/shop/tools/pay.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
export default defineTool({
  description: "Pay with a card",
  input: Schema.Struct({ cardNumber: Schema.String.pipe(Schema.pattern(/^[0-9]{16}$/)), amount: Schema.Number }),
  output: Schema.String,
  redact: ["cardNumber"],
  run: () => Effect.succeed("paid")
})
`
      })
      const secret = "4000-99"
      const told: Array<string> = []
      // Single quotes, as models write them: Node's parse error quotes the text around them. Then
      // a number of the wrong form, which the schema's error quotes.
      const model = Scripted.make((request, index) => {
        const last = request.messages[request.messages.length - 1]
        if (last?._tag === "tool") told.push(last.content)
        return index === 0
          ? { toolCalls: [{ name: "pay", rawArguments: `{"cardNumber": '${secret}', "amount": 12}` }] }
          : index === 1
          ? { toolCalls: [{ name: "pay", arguments: { cardNumber: secret, amount: 12 } }] }
          : { text: "the card number is not right" }
      })
      const server = yield* startServer(root, { model })
      const run = yield* submit(server.url, "shop", "pay for my order")
      expect(yield* waitForRun(server.url, run.runId)).toMatchObject({ status: "completed", output: "the card number is not right" })
      // The model read its own arguments back in what went wrong.
      expect(told).toEqual([expect.stringContaining(secret), expect.stringContaining(secret)])
      const listed = yield* http(`${server.url}/api/events?runId=${run.runId}&limit=1000`)
      const followed = yield* http(`${server.url}/api/runs/${run.runId}/events`)
      expect(listed.text).not.toContain(secret)
      expect(followed.text).not.toContain(secret)
      const failures = (followed.json as Array<EventBody>).filter((event) => event.type === "tool.call.failed").map((event) => event.data)
      expect(failures).toEqual([
        expect.objectContaining({ input: "[arguments redacted: not valid JSON]", error: expect.stringContaining("are not valid JSON") }),
        expect.objectContaining({ input: { cardNumber: "[redacted]", amount: 12 }, error: expect.stringContaining("at cardNumber") })
      ])
    }))
})
