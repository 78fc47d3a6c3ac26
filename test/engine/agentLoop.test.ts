import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import type { LanguageModel, ModelChunk } from "../../src/models/Model.js"
import * as Scripted from "../../src/models/scripted.js"
import { agentFile, tempProject } from "../support/tempProject.js"
import { http, startServer, waitForRun } from "../support/server.js"

const lookupTool = `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Look up an order by id",
  input: Schema.Struct({ orderId: Schema.String, quantity: Schema.Number }),
  output: Schema.Struct({ status: Schema.String }),
  run: ({ orderId }) => {
    // A throw in \`run\` itself, before any Effect exists, is a crash of the tool as much as a defect inside one.
    if (orderId === "thrown") throw new Error("thrown before any Effect")
    return orderId === "boom"
      ? Effect.fail({ _tag: "OrderSystemDown", message: "the order system is down" })
      : orderId === "defect"
      ? Effect.die(new Error("null pointer in tool"))
      : Effect.succeed({ status: "shipped " + orderId })
  }
})
`

const project = {
  "agents/shop/agent.ts": `import { defineAgent } from "foundry"
import lookup from "./tools/lookup.tool.js"

export default defineAgent({
  description: "Shop assistant",
  model: "demo",
  instructions: ({ instance }) => "You serve instance " + instance.id + ".",
  tools: [lookup],
  maxTurns: 3
})
`,
  "agents/shop/tools/lookup.tool.ts": lookupTool,
  "agents/plain/agent.ts": agentFile({ description: "No tools" })
}

interface EventView {
  readonly type: string
  readonly data: Record<string, unknown>
}

const runTo = (url: string, agent: string, message: string) =>
  Effect.gen(function*() {
    const created = yield* http(`${url}/api/runs`, { body: { agent, message } })
    expect(created.status).toBe(202)
    const { runId } = created.json as { runId: string }
    const run = (yield* waitForRun(url, runId)) as Record<string, unknown>
    const events = (yield* http(`${url}/api/runs/${runId}/events`)).json as ReadonlyArray<EventView>
    return { run, events, runId }
  })

/** A model that makes `calls` in its first turn and answers `text` in its second; `results` is what it was shown of the calls. */
const callsThenAnswer = (calls: NonNullable<Extract<Scripted.Turn, { readonly toolCalls?: unknown }>["toolCalls"]>, text: string) => {
  const results: Array<string> = []
  const model = Scripted.make((request, index) => {
    if (index === 0) return { toolCalls: calls }
    results.push(...request.messages.flatMap((m) => m._tag === "tool" ? [m.content] : []))
    return { text }
  })
  return { model, results }
}

/** A tool file `keyed` whose idempotency key and run are the given expressions. */
const keyedTool = (idempotencyKey: string, run: string) => `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
export default defineTool({
  description: "Charges once",
  input: Schema.Struct({ id: Schema.String }),
  output: Schema.String,
  idempotencyKey: ${idempotencyKey},
  run: ${run}
})
`

describe("the agent loop", () => {
  it.scopedLive("feeds a tool's result back to the model and ends with its final answer", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const seen: Array<string> = []
      const model = Scripted.make((request, index) => {
        if (index === 0) return { toolCalls: [{ name: "lookup", arguments: { orderId: "42", quantity: 1 } }] }
        const last = request.messages[request.messages.length - 1]
        seen.push(last?._tag === "tool" ? last.content : "")
        return { text: "Your order is on its way." }
      })
      const server = yield* startServer(root, { model })
      const { events, run } = yield* runTo(server.url, "shop", "where is 42?")
      expect(run).toMatchObject({ status: "completed", output: "Your order is on its way." })
      expect(seen).toEqual([JSON.stringify({ status: "shipped 42" })])
      expect(events.map((e) => e.type)).toEqual([
        "run.queued",
        "run.started",
        "model.turn.started",
        "model.turn.completed",
        "tool.call.started",
        "tool.call.completed",
        "model.turn.started",
        "model.turn.completed",
        "run.completed"
      ])
    }))

  it.scopedLive("gives tool calls that come without an id, or with one the run already has, ids of their own; the conversation goes on", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const call = (id: string, orderId: string): ModelChunk => ({ _tag: "ToolCall", call: { id, name: "lookup", arguments: JSON.stringify({ orderId, quantity: 1 }) } })
      const seen: Array<ReadonlyArray<string>> = []
      // As some OpenAI-compatible servers answer: two calls of one turn with one id, one with none, `same` again the next turn.
      const model: LanguageModel = {
        name: "same-ids",
        stream: (request) => {
          const sinceUser = request.messages.slice(request.messages.findLastIndex((m) => m._tag === "user"))
          const turn = sinceUser.filter((m) => m._tag === "assistant").length
          seen.push(sinceUser.flatMap((m) => m._tag === "tool" ? [`${m.toolCallId} ${m.content}`] : []))
          return Stream.fromIterable<ModelChunk>(
            turn === 0 ? [call("same", "1"), call("same", "2"), call("", "3")] : turn === 1 ? [call("same", "4")] : [{ _tag: "TextDelta", text: "looked up" }]
          )
        }
      }
      const server = yield* startServer(root, { model })
      const first = yield* runTo(server.url, "shop", "look them up")
      expect(first.run).toMatchObject({ status: "completed", output: "looked up" })
      const ids = first.events.filter((e) => e.type === "tool.call.completed").map((e) => e.data.toolCallId)
      expect(new Set(ids).size).toBe(4)
      expect(ids[0]).toBe("same")
      // The model was shown every call's own result.
      expect(seen[2]?.map((line) => line.slice(line.indexOf(" ") + 1))).toEqual(["{\"status\":\"shipped 1\"}", "{\"status\":\"shipped 2\"}", "{\"status\":\"shipped 3\"}", "{\"status\":\"shipped 4\"}"])
      const conversation = String(first.run.conversationId)
      const next = yield* http(`${server.url}/api/runs`, { body: { agent: "shop", message: "again", conversation } })
      expect(yield* waitForRun(server.url, (next.json as { runId: string }).runId)).toMatchObject({ status: "completed" })
    }))

  it.scopedLive("gives the model a readable error when it sends arguments the tool's schema rejects", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const results: Array<string> = []
      const model = Scripted.make((request, index) => {
        if (index === 0) return { toolCalls: [{ name: "lookup", arguments: { orderId: 42 } }] }
        const last = request.messages[request.messages.length - 1]
        results.push(last?._tag === "tool" ? last.content : "")
        return { text: "Sorry, I could not look that up." }
      })
      const server = yield* startServer(root, { model })
      const { events, run } = yield* runTo(server.url, "shop", "where is 42?")
      expect(run).toMatchObject({ status: "completed" })
      // One line per wrong field, all of them, so that the model can fix its call in one go.
      expect(results[0]).toBe("Error: invalid arguments for lookup:\norderId: expected a string, got 42\nquantity: is missing")
      const failed = events.find((e) => e.type === "tool.call.failed")
      expect(failed?.data).toMatchObject({ tool: "lookup", input: { orderId: 42 } })
    }))

  it.scopedLive("reports malformed JSON arguments, an unknown tool, a failing tool and a crashing tool to the model", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const { model, results } = callsThenAnswer([
        { name: "lookup", rawArguments: "{not json at all" },
        { name: "teleport", arguments: {} },
        { name: "lookup", arguments: { orderId: "boom", quantity: 1 } },
        { name: "lookup", arguments: { orderId: "defect", quantity: 1 } }
      ], "done")
      const server = yield* startServer(root, { model })
      const { run } = yield* runTo(server.url, "shop", "try everything")
      expect(run).toMatchObject({ status: "completed", output: "done" })
      expect(results[0]).toContain("the arguments for lookup are not valid JSON")
      expect(results[1]).toContain(`there is no tool named "teleport"`)
      expect(results[1]).toContain("lookup")
      expect(results[2]).toContain("OrderSystemDown: the order system is down")
      expect(results[3]).toContain("null pointer in tool")
    }))

  it.scopedLive("reports a tool whose run throws before returning its Effect to the model, and goes on", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const { model, results } = callsThenAnswer([{ name: "lookup", arguments: { orderId: "thrown", quantity: 1 } }], "sorry, the lookup crashed")
      const server = yield* startServer(root, { model })
      const { events, run } = yield* runTo(server.url, "shop", "where is my order?")
      expect(run).toMatchObject({ status: "completed", output: "sorry, the lookup crashed" })
      expect(results).toEqual(["Error: lookup failed: thrown before any Effect"])
      expect(events.find((e) => e.type === "tool.call.failed")?.data).toMatchObject({ tool: "lookup", error: "lookup failed: thrown before any Effect" })
    }))

  it.scopedLive("a key or approval policy that throws is the call's failure or a person's question; instructions that throw fail the run naming the file", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        ...project,
        "agents/shop/tools/keyed.tool.ts": keyedTool(`() => { throw new Error("no key today") }`, `() => Effect.succeed("charged")`),
        "agents/shop/tools/guarded.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
export default defineTool({
  description: "Refunds",
  input: Schema.Struct({ id: Schema.String }),
  output: Schema.String,
  approval: () => { throw new Error("policy broke") },
  run: () => Effect.succeed("refunded")
})
`,
        "agents/shop/agent.ts": `import { defineAgent } from "foundry"
import lookup from "./tools/lookup.tool.js"
import keyed from "./tools/keyed.tool.js"
import guarded from "./tools/guarded.tool.js"
export default defineAgent({ description: "Shop assistant", model: "demo", tools: [lookup, keyed, guarded], maxTurns: 3 })
`,
        "agents/moody/agent.ts": `import { defineAgent } from "foundry"
export default defineAgent({ description: "Moody", model: "demo", instructions: () => { throw new TypeError("no instructions today") } })
`,
        // Typed as text, but a .js route file can give an async function: its Promise is no prompt.
        "agents/eager/agent.ts": `import { defineAgent } from "foundry"
const later = async () => "You help"
export default defineAgent({ description: "Eager", model: "demo", instructions: later as unknown as () => string })
`
      })
      const { model, results } = callsThenAnswer([{ name: "keyed", arguments: { id: "1" } }], "done")
      const server = yield* startServer(root, { model })
      const { run } = yield* runTo(server.url, "shop", "charge it")
      expect(run).toMatchObject({ status: "completed", output: "done" })
      expect(results[0]).toBe("Error: keyed was not run: its idempotencyKey(input) threw Error: no key today")
      const moody = yield* runTo(server.url, "moody", "hello")
      expect(moody.run).toMatchObject({ status: "failed" })
      expect(String(moody.run.error)).toContain(`the instructions of agent "moody" (agents/moody/agent.ts) threw TypeError: no instructions today`)
      const eager = yield* runTo(server.url, "eager", "hello")
      expect(eager.run).toMatchObject({ status: "failed" })
      expect(String(eager.run.error)).toContain(`the instructions of agent "eager" (agents/eager/agent.ts) returned a Promise, not a string`)
    }))

  it.scopedLive("a key that is empty or no string does not run the call: every call would share it, the first side effect answering all", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        ...project,
        "agents/shop/tools/keyed.tool.ts": keyedTool(
          `({ id }) => (id === "none" ? "" : id === "number" ? 7 as unknown as string : id)`,
          "(_input, context) => Effect.succeed(`charged under ${context.idempotencyKey}`)"
        ),
        "agents/shop/agent.ts": `import { defineAgent } from "foundry"
import keyed from "./tools/keyed.tool.js"
export default defineAgent({ description: "Shop assistant", model: "demo", tools: [keyed] })
`
      })
      const { model, results } = callsThenAnswer([
        { name: "keyed", arguments: { id: "none" } },
        { name: "keyed", arguments: { id: "number" } },
        { name: "keyed", arguments: { id: "order-1" } }
      ], "done")
      const server = yield* startServer(root, { model })
      const { run } = yield* runTo(server.url, "shop", "charge them")
      expect(run).toMatchObject({ status: "completed", output: "done" })
      expect(results).toEqual([
        "Error: keyed was not run: its idempotencyKey(input) returned an empty string, not a non-empty string",
        "Error: keyed was not run: its idempotencyKey(input) returned 7 (number), not a non-empty string",
        "charged under order-1"
      ])
    }))

  it.scopedLive("fails the run with a clear error when maxTurns runs out", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const model = Scripted.make(() => ({ toolCalls: [{ name: "lookup", arguments: { orderId: "1", quantity: 1 } }] }))
      const server = yield* startServer(root, { model })
      const { run, events } = yield* runTo(server.url, "shop", "loop forever")
      expect(run.status).toBe("failed")
      expect(run.error).toContain(`agent "shop" used all 3 model turns`)
      expect(run.error).toContain("agents/shop/agent.ts")
      expect(events.filter((e) => e.type === "model.turn.completed")).toHaveLength(3)
      expect(events[events.length - 1]?.type).toBe("run.failed")
    }))

  it.scopedLive("computes instructions from the instance and keeps the conversation's history", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const systems: Array<string> = []
      const histories: Array<number> = []
      const model = Scripted.make((request) => {
        systems.push(request.system)
        histories.push(request.messages.length)
        return { text: `reply ${histories.length}` }
      })
      const server = yield* startServer(root, { model })
      const first = yield* http(`${server.url}/api/runs`, { body: { agent: "shop", message: "hi", instance: "acme" } })
      const { conversationId, runId } = first.json as { conversationId: string; runId: string }
      yield* waitForRun(server.url, runId)
      const second = yield* http(`${server.url}/api/runs`, {
        body: { agent: "shop", message: "again", instance: "acme", conversation: conversationId }
      })
      yield* waitForRun(server.url, (second.json as { runId: string }).runId)
      expect(systems).toEqual(["You serve instance acme.", "You serve instance acme."])
      expect(histories).toEqual([1, 3])
      const messages = yield* http(`${server.url}/api/conversations/${conversationId}/messages`)
      expect((messages.json as Array<{ role: string; content: string }>).map((m) => `${m.role}:${m.content}`)).toEqual([
        "user:hi",
        "assistant:reply 1",
        "user:again",
        "assistant:reply 2"
      ])
    }))

  it.scopedLive("fails the run with the model's error when the model fails permanently", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const model = Scripted.make([{ error: { kind: "permanent", status: 400, message: "context length exceeded" } }])
      const server = yield* startServer(root, { model })
      const { run } = yield* runTo(server.url, "plain", "hello")
      expect(run.status).toBe("failed")
      expect(run.error).toContain("context length exceeded")
    }))

  it.scopedLive("streams text deltas over SSE and ends the stream when the run ends", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const model = Scripted.make([{ text: "one two three four", delay: "150 millis" }])
      const server = yield* startServer(root, { model })
      const created = yield* http(`${server.url}/api/runs`, { body: { agent: "plain", message: "count" } })
      const { runId } = created.json as { runId: string }
      const body = yield* Effect.promise(async () => {
        const response = await fetch(`${server.url}/api/runs/${runId}/events`, { headers: { accept: "text/event-stream" } })
        return { type: response.headers.get("content-type"), text: await response.text() }
      })
      expect(body.type).toContain("text/event-stream")
      const frames = body.text.trim().split("\n\n").map((frame) => frame.split("\n"))
      const deltas = frames.filter((f) => f.includes("event: model.delta")).map((f) => {
        const data = f.find((line) => line.startsWith("data: "))?.slice(6) ?? "{}"
        return String((JSON.parse(data) as { data: { text: string } }).data.text)
      })
      expect(deltas.length).toBeGreaterThan(1)
      expect(deltas.join("")).toBe("one two three four")
      expect(frames[frames.length - 1]).toContain("event: run.completed")
    }))
})
