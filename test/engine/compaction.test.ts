/**
 * Long conversations stay inside the model's context window: against a strict Chat Completions
 * server (through the real `openai` client), a conversation that crosses the soft and then the
 * hard threshold keeps completing while sending fewer tokens than its full transcript, each step
 * reported as it starts and as what it did, a context-length error from the server is recovered
 * by compaction, a message larger than the whole window (alone, or with the instructions and tools
 * every request carries) is refused with its size and the way out, a tool result larger than it is
 * cut, and a history larger than the summarizer's window is summarized in pieces that fit it.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import OpenAI from "openai"
import { ModelResolverLive } from "../../src/models/ModelResolverLive.js"
import * as OpenAi from "../../src/models/openai.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { type ReplyFn, serverError, strictOpenAi, text, toolCalls } from "../support/strictOpenAi.js"
import { clientRanFetchPage } from "../support/clientHistory.js"
import { tempProject } from "../support/tempProject.js"

const project = (config: string) => ({
  "agents/reader/agent.ts": `import { defineAgent } from "foundry"
import fetchPage from "./tools/fetch-page.tool.js"

export default defineAgent({ description: "Reads pages", tools: [fetchPage], maxTurns: 4 })
`,
  "agents/reader/tools/fetch-page.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Fetch a page of the given size",
  input: Schema.Struct({ page: Schema.Number, size: Schema.Number }),
  output: Schema.String,
  run: ({ page, size }) => Effect.succeed("page " + page + ": " + "lorem ipsum ".repeat(Math.ceil(size / 12)).slice(0, size))
})
`,
  "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig(${config})\n`
})

/**
 * A user message asks for a page (of 4000 characters, or as many as it says); after the tool's
 * result, a short answer; a summary request gets a short summary.
 */
const reader: ReplyFn = (request) => {
  const system = request.messages.find((m) => m.role === "system")
  if (system !== undefined && system.role === "system" && system.content.startsWith("You compact")) return text("summary: pages were read")
  const lastUser = request.messages.findLastIndex((m) => m.role === "user")
  const last = request.messages[lastUser]
  const after = request.messages.slice(lastUser + 1)
  if (after.length > 0) return text(`read ${after.filter((m) => m.role === "tool").length} page`)
  const asked = last !== undefined && last.role === "user" ? last.content : ""
  const page = Number(/page (\d+)/.exec(asked)?.[1] ?? 0)
  const size = Number(/of (\d+) characters/.exec(asked)?.[1] ?? 4000)
  return toolCalls({ id: `call_${page}_${request.messages.length}`, name: "fetch-page", arguments: JSON.stringify({ page, size }) })
}

/** The model a request body asked for. */
const modelOf = (request: unknown): string => typeof request === "object" && request !== null && "model" in request ? String(request.model) : ""

/** Whether a request body is a summary request (its system message is the compaction prompt). */
const isSummaryRequest = (request: unknown): boolean =>
  typeof request === "object" && request !== null && "messages" in request && Array.isArray(request.messages) &&
  request.messages.some((m: unknown) =>
    typeof m === "object" && m !== null && "role" in m && m.role === "system" && "content" in m &&
    typeof m.content === "string" && m.content.startsWith("You compact"))

const eventsOf = (url: string, runId: string) =>
  Effect.map(http(`${url}/api/runs/${runId}/events`), (r) =>
    Array.isArray(r.json) ? r.json.flatMap((e: unknown) => typeof e === "object" && e !== null && "type" in e && "data" in e ? [{ type: String(e.type), data: e.data }] : []) : [])

/** Asks `message` in `conversation` (a new one when undefined) and waits for the run's end. */
const ask = (url: string, message: string, conversation?: string) =>
  Effect.gen(function*() {
    const created = yield* http(`${url}/api/runs`, { body: { agent: "reader", message, ...(conversation === undefined ? {} : { conversation }) } })
    const { conversationId, runId } = created.json as { runId: string; conversationId: string }
    return { conversation: conversationId, runId, run: yield* waitForRun(url, runId) }
  })

const converse = (url: string, pages: number) =>
  Effect.gen(function*() {
    let conversation: string | undefined
    const runIds: Array<string> = []
    for (let page = 1; page <= pages; page++) {
      const created = yield* http(`${url}/api/runs`, {
        // Long messages: they cannot be elided, so the hard threshold is reached as well.
        body: { agent: "reader", message: `read page ${page}. ${"Please read it carefully. ".repeat(96)}`, ...(conversation === undefined ? {} : { conversation }) }
      })
      expect(created.status).toBe(202)
      const body = created.json
      if (typeof body !== "object" || body === null || !("runId" in body) || !("conversationId" in body)) return yield* Effect.die(new Error(created.text))
      conversation = String(body.conversationId)
      runIds.push(String(body.runId))
      expect(yield* waitForRun(url, String(body.runId))).toMatchObject({ status: "completed", output: "read 1 page" })
    }
    return { conversation: conversation ?? "", runIds }
  })

/**
 * A message of about 2,930 tokens in a provider's window of 3,000 (Foundry told `told`): within the
 * window with the agent's instructions and tools (it is taken into the conversation), not with its
 * turn's tool call and result too (its run fails), nor with the summary request's own instructions
 * (sent whole, OpenAI would refuse it); the conversation's next messages are answered.
 */
const goesOnAfterALongMessage = (told: number) =>
  Effect.gen(function*() {
    const provider = yield* strictOpenAi({ otherwise: reader, contextWindows: { "gpt-4.1-mini": 3000 } })
    const root = yield* tempProject(project(`{ context: { windows: { "openai:gpt-4.1-mini": ${told} } } }`))
    const server = yield* startServer(root, { model: OpenAi.make({ model: "gpt-4.1-mini", apiKey: "test", baseURL: provider.url }) })
    const first = yield* ask(server.url, `read page 1 of 100 characters. ${"Please read it carefully. ".repeat(450)}`)
    expect(first.run).toMatchObject({ status: "failed" })
    for (const page of [2, 3]) {
      const next = yield* ask(server.url, `read page ${page} of 100 characters`, first.conversation)
      expect(next.run).toMatchObject({ status: "completed", output: "read 1 page" })
    }
  })

/**
 * A server of the reader project with `config`, its agent on openai:gpt-4.1-mini, through the
 * resolver users get, configured as the environment would configure it, against `providerUrl`.
 */
const serverOnOpenAi = (providerUrl: string, config: string, model: string | ReadonlyArray<string> = "openai:gpt-4.1-mini") =>
  Effect.gen(function*() {
    const files = project(config)
    const root = yield* tempProject({
      ...files,
      "agents/reader/agent.ts": (files["agents/reader/agent.ts"] ?? "").replace("maxTurns: 4", `maxTurns: 4, model: ${JSON.stringify(model)}`)
    })
    const models = ModelResolverLive.pipe(
      Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["OPENAI_API_KEY", "test"], ["OPENAI_BASE_URL", providerUrl]])))),
      Layer.orDie
    )
    return yield* startServer(root, { models })
  })

describe("context compaction", () => {
  it.scopedLive("crossing the soft, then the hard threshold keeps the conversation completing with fewer tokens sent", () =>
    Effect.gen(function*() {
      const provider = yield* strictOpenAi({ otherwise: reader })
      // About 600 tokens of message and 1,000 of tool result a page: the soft threshold (60% of
      // 5,000) is crossed on page 2, the hard one (80%) a few pages later.
      const root = yield* tempProject(project(`{ context: { windows: { "openai:gpt-4.1-mini": 5000 } } }`))
      const server = yield* startServer(root, { model: OpenAi.make({ model: "gpt-4.1-mini", apiKey: "test", baseURL: provider.url }) })
      const { conversation, runIds } = yield* converse(server.url, 10)
      const events = (yield* Effect.forEach(runIds, (id) => eventsOf(server.url, id))).flat()
      const compacted = events.filter((e) => e.type === "context.compacted").map((e) => typeof e.data === "object" && e.data !== null && "method" in e.data ? String(e.data.method) : "")
      expect(compacted).toContain("elide")
      expect(compacted).toContain("summary")
      // The full transcript is kept; what the last request sent is smaller than it.
      const transcript = yield* http(`${server.url}/api/conversations/${conversation}/messages`)
      const stored = Array.isArray(transcript.json) ? transcript.json : []
      expect(stored.some((m: unknown) => typeof m === "object" && m !== null && "role" in m && m.role === "summary")).toBe(true)
      const fullCharacters = stored.reduce((sum: number, m: unknown) =>
        sum + (typeof m === "object" && m !== null && "content" in m ? String(m.content).length : 0), 0)
      const requests = provider.requests.filter((r) => JSON.stringify(r).includes("read page 10."))
      const last = requests[requests.length - 1]
      expect(last).toBeDefined()
      expect(JSON.stringify(last).length).toBeLessThan(fullCharacters)
      expect(provider.rejected).toEqual([])
    }))

  it.scopedLive("the config's summaryModel writes the summaries; the agent's own model answers the turns", () =>
    Effect.gen(function*() {
      const provider = yield* strictOpenAi({ otherwise: reader })
      const server = yield* serverOnOpenAi(provider.url, `{ context: { windows: { "openai:gpt-4.1-mini": 5000 }, summaryModel: "openai:gpt-4.1-nano" } }`)
      yield* converse(server.url, 10)
      const summaries = provider.requests.filter(isSummaryRequest)
      expect(summaries.length).toBeGreaterThan(0)
      expect(new Set(summaries.map(modelOf))).toEqual(new Set(["gpt-4.1-nano"]))
      expect(new Set(provider.requests.filter((r) => !isSummaryRequest(r)).map(modelOf))).toEqual(new Set(["gpt-4.1-mini"]))
      expect(provider.rejected).toEqual([])
    }))

  it.scopedLive("the summary calls' tokens and cost count in their run's usage, each told by a context.summary.completed event", () =>
    Effect.gen(function*() {
      // The summarizer reports a usage of its own, so that a summary call's tokens cannot pass for a turn's.
      const provider = yield* strictOpenAi({
        otherwise: (request, index) =>
          isSummaryRequest(request) ? text("summary: pages were read", { promptTokens: 100_000, completionTokens: 5_000 }) : reader(request, index)
      })
      const server = yield* serverOnOpenAi(provider.url, `{ context: { windows: { "openai:gpt-4.1-mini": 5000 }, summaryModel: "openai:gpt-4.1-nano" } }`)
      const { conversation, runIds } = yield* converse(server.url, 10)
      interface Usage {
        readonly inputTokens: number
        readonly outputTokens: number
        readonly costUsd: number
      }
      const usageOf = (events: ReadonlyArray<{ readonly type: string; readonly data: unknown }>, type: string) =>
        events.flatMap((e) => e.type === type ? [(e.data as { usage: Usage }).usage] : [])
      const sum = (usages: ReadonlyArray<Usage>) => ({
        inputTokens: usages.reduce((total, u) => total + u.inputTokens, 0),
        outputTokens: usages.reduce((total, u) => total + u.outputTokens, 0),
        costUsd: usages.reduce((total, u) => total + u.costUsd, 0)
      })
      const summaryCalls: Array<unknown> = []
      let conversationUsage = { inputTokens: 0, outputTokens: 0, costUsd: 0 }
      for (const runId of runIds) {
        const events = yield* eventsOf(server.url, runId)
        summaryCalls.push(...events.filter((e) => e.type === "context.summary.completed").map((e) => e.data))
        const spent = sum([...usageOf(events, "model.turn.completed"), ...usageOf(events, "context.summary.completed")])
        const run = (yield* http(`${server.url}/api/runs/${runId}`)).json as { usage: Usage & { unpricedTurns: number } }
        expect(run.usage).toMatchObject({ inputTokens: spent.inputTokens, outputTokens: spent.outputTokens, unpricedTurns: 0 })
        expect(run.usage.costUsd).toBeCloseTo(spent.costUsd, 10)
        conversationUsage = sum([conversationUsage, spent])
      }
      // One event a summary request the provider answered, naming the model and its usage at gpt-4.1-nano's price.
      expect(summaryCalls.length).toBe(provider.requests.filter(isSummaryRequest).length)
      expect(summaryCalls.length).toBeGreaterThan(0)
      for (const call of summaryCalls) {
        expect(call).toEqual({ model: "openai:gpt-4.1-nano", usage: { inputTokens: 100_000, outputTokens: 5_000, costUsd: expect.closeTo(0.012, 10) }, durationMs: expect.any(Number) })
      }
      const report = (yield* http(`${server.url}/api/usage?conversation=${conversation}&groupBy=conversation`)).json as { total: Usage }
      expect(report.total).toMatchObject({ inputTokens: conversationUsage.inputTokens, outputTokens: conversationUsage.outputTokens })
      expect(report.total.inputTokens).toBeGreaterThan(100_000 * summaryCalls.length)
    }))

  it.scopedLive("a run's token budget counts its summary calls: the run whose summary goes over it fails after its turn (or ends with it, a final answer being kept)", () =>
    Effect.gen(function*() {
      const provider = yield* strictOpenAi({
        otherwise: (request, index) =>
          isSummaryRequest(request) ? text("summary: pages were read", { promptTokens: 100_000, completionTokens: 5_000 }) : reader(request, index)
      })
      // A run's turns use a few thousand tokens: only a summary call takes one over 50,000.
      const root = yield* tempProject(project(`{ context: { windows: { "openai:gpt-4.1-mini": 5000 } }, budget: { maxTokensPerRun: 50000 } }`))
      const server = yield* startServer(root, { model: OpenAi.make({ model: "gpt-4.1-mini", apiKey: "test", baseURL: provider.url }) })
      let conversation: string | undefined
      for (let page = 1; page <= 10; page++) {
        const asked = yield* ask(server.url, `read page ${page}. ${"Please read it carefully. ".repeat(96)}`, conversation)
        conversation = asked.conversation
        const events = yield* eventsOf(server.url, asked.runId)
        if (!events.some((e) => e.type === "context.summary.completed")) {
          expect(asked.run).toMatchObject({ status: "completed" })
          continue
        }
        // Past the budget after the turn its summary was made for: a turn that calls tools fails the
        // run; a final answer, already paid for, is kept (docs/agents.md).
        const turns = events.filter((e) => e.type === "model.turn.completed")
        const last = turns[turns.length - 1]?.data
        const calledTools = typeof last === "object" && last !== null && "toolCalls" in last && Array.isArray(last.toolCalls) && last.toolCalls.length > 0
        expect(asked.run).toMatchObject({ status: calledTools ? "failed" : "completed" })
        expect(events).toContainEqual({ type: "budget.exceeded", data: { budget: "maxTokensPerRun", limit: 50000, used: expect.any(Number), setIn: "foundry.config.ts" } })
        return
      }
      expect.unreachable("no run summarized")
    }))

  it.scopedLive("a summary call the provider fails and that is asked again is told by a model.retry event of the summary, between the compaction's opening and its summary", () =>
    Effect.gen(function*() {
      let failed = false
      const provider = yield* strictOpenAi({
        otherwise: (request, index) => {
          if (!isSummaryRequest(request) || failed) return reader(request, index)
          failed = true
          return serverError()
        }
      })
      const server = yield* serverOnOpenAi(provider.url, `{ context: { windows: { "openai:gpt-4.1-mini": 5000 } }, modelRetry: { times: 1, base: "1 millis", max: "1 millis" } }`)
      const { runIds } = yield* converse(server.url, 10)
      expect(failed).toBe(true)
      const runs = yield* Effect.forEach(runIds, (id) => eventsOf(server.url, id))
      // Only the summary call failed, once: one retry in the whole conversation.
      expect(runs.flat().filter((e) => e.type === "model.retry")).toHaveLength(1)
      const events = runs.find((run) => run.some((e) => e.type === "model.retry")) ?? []
      const retry = events.findIndex((e) => e.type === "model.retry")
      // The turn whose request the compaction fitted: the summary call is told as that turn's.
      const turn = (events.slice(retry).find((e) => e.type === "model.turn.completed")?.data as { turn: number }).turn
      expect(events[retry]?.data).toEqual({
        turn,
        model: "openai:gpt-4.1-mini",
        status: 500,
        error: expect.stringContaining("The server had an error"),
        summary: true
      })
      const compacting = events.findIndex((e) => e.type === "context.compacting" && (e.data as { method: string }).method === "summary")
      expect(compacting).toBeGreaterThanOrEqual(0)
      expect(compacting).toBeLessThan(retry)
      expect(events.findIndex((e) => e.type === "context.summary.completed")).toBeGreaterThan(retry)
      expect(events.at(-1)).toMatchObject({ type: "run.completed" })
    }))

  it.scopedLive("a summary call whose model keeps failing goes to the agent's fallback model, told by model.retry and model.fallback events of the summary", () =>
    Effect.gen(function*() {
      // gpt-4.1-mini answers the turns and fails every summary request; gpt-4.1-nano writes the summaries.
      const provider = yield* strictOpenAi({
        otherwise: (request, index) => isSummaryRequest(request) && modelOf(request.body) === "gpt-4.1-mini" ? serverError() : reader(request, index)
      })
      const server = yield* serverOnOpenAi(
        provider.url,
        `{ context: { windows: { "openai:gpt-4.1-mini": 5000, "openai:gpt-4.1-nano": 5000 } }, modelRetry: { times: 1, base: "1 millis", max: "1 millis" } }`,
        ["openai:gpt-4.1-mini", "openai:gpt-4.1-nano"]
      )
      const { runIds } = yield* converse(server.url, 10)
      const events = (yield* Effect.forEach(runIds, (id) => eventsOf(server.url, id))).flat()
      const summaries = events.filter((e) => e.type === "context.summary.completed")
      expect(summaries.length).toBeGreaterThan(0)
      expect(summaries.map((e) => (e.data as { model: string }).model)).toEqual(summaries.map(() => "openai:gpt-4.1-nano"))
      // Each summary call: one retry on gpt-4.1-mini, then the fallback to gpt-4.1-nano.
      const fallbacks = events.filter((e) => e.type === "model.fallback")
      expect(fallbacks).toHaveLength(summaries.length)
      for (const fallback of fallbacks) {
        expect(fallback.data).toEqual({
          turn: expect.any(Number),
          from: "openai:gpt-4.1-mini",
          to: "openai:gpt-4.1-nano",
          status: 500,
          error: expect.stringContaining("The server had an error"),
          summary: true
        })
      }
      const retries = events.filter((e) => e.type === "model.retry")
      expect(retries).toHaveLength(summaries.length)
      for (const retry of retries) expect(retry.data).toMatchObject({ model: "openai:gpt-4.1-mini", status: 500, summary: true })
      expect(events.filter((e) => e.type === "run.failed")).toEqual([])
    }))

  it.scopedLive("a summary with no text in it compacts nothing: the older messages stay", () =>
    Effect.gen(function*() {
      // The summarizer answers with a tool call and no text, as a refusing or confused model may.
      const provider = yield* strictOpenAi({
        otherwise: (request, index) =>
          isSummaryRequest(request) ? toolCalls({ id: "call_summary", name: "fetch-page", arguments: "{}" }) : reader(request, index)
      })
      // Summaries are asked for well inside the window: unsummarized, the conversation still fits it.
      const root = yield* tempProject(project(`{ context: { windows: { "openai:gpt-4.1-mini": 8000 }, soft: 0.3, hard: 0.4 } }`))
      const server = yield* startServer(root, { model: OpenAi.make({ model: "gpt-4.1-mini", apiKey: "test", baseURL: provider.url }) })
      const { conversation, runIds } = yield* converse(server.url, 5)
      expect(provider.requests.filter(isSummaryRequest).length).toBeGreaterThan(0)
      const stored = (yield* http(`${server.url}/api/conversations/${conversation}/messages`)).json as ReadonlyArray<{ readonly role: string }>
      expect(stored.filter((m) => m.role === "summary")).toEqual([])
      // Every page's message is still sent: nothing was summarized away.
      const last = provider.requests.filter((r) => JSON.stringify(r).includes("read page 5.")).at(-1)
      expect(JSON.stringify(last)).toContain("read page 1.")
      const events = (yield* Effect.forEach(runIds, (id) => eventsOf(server.url, id))).flat()
      expect(events.filter((e) => e.type === "context.compacted" && (e.data as { method: string }).method === "summary")).toEqual([])
      expect(events).toContainEqual({
        type: "context.uncompacted",
        data: { method: "summary", tokens: expect.any(Number), reason: "the summary model (openai:gpt-4.1-mini) gave no summary" }
      })
    }))

  it.scopedLive("each compaction step is announced before it starts, and one that removes nothing says so instead of claiming a compaction", () =>
    Effect.gen(function*() {
      const provider = yield* strictOpenAi({ otherwise: reader })
      const root = yield* tempProject(project(`{ context: { windows: { "openai:gpt-4.1-mini": 5000 } } }`))
      const server = yield* startServer(root, { model: OpenAi.make({ model: "gpt-4.1-mini", apiKey: "test", baseURL: provider.url }) })
      const { runIds } = yield* converse(server.url, 10)
      const events = (yield* Effect.forEach(runIds, (id) => eventsOf(server.url, id))).flat()
      // The summary step's model calls (context.summary.completed) come between its opening and its closing.
      const steps = events.filter((e) => e.type.startsWith("context.") && e.type !== "context.summary.completed")
      expect(steps.length).toBeGreaterThan(0)
      // Every step opens with `context.compacting` and closes with what it did, of the same method.
      for (let index = 0; index < steps.length; index += 2) {
        const [opened, closed] = [steps[index], steps[index + 1]]
        expect(opened).toMatchObject({ type: "context.compacting", data: { window: 5000 } })
        expect(closed?.data).toMatchObject({ method: (opened?.data as { method: string }).method })
        if (closed?.type === "context.compacted") {
          const { afterTokens, beforeTokens } = closed.data as { beforeTokens: number; afterTokens: number }
          expect(afterTokens).toBeLessThan(beforeTokens)
        } else {
          expect(closed).toMatchObject({ type: "context.uncompacted", data: { reason: expect.any(String) } })
        }
      }
      const closings = steps.filter((e) => e.type !== "context.compacting").map((e) => `${e.type} ${(e.data as { method: string }).method}`)
      expect(closings).toContain("context.uncompacted elide")
      expect(closings).toContain("context.compacted elide")
      expect(closings).toContain("context.compacted summary")
    }))

  it.scopedLive("a message larger than the whole context window fails its run, saying how large it is against which window, and is never sent", () =>
    Effect.gen(function*() {
      // The provider's window is the one Foundry is told: OpenAI would refuse the message with context_length_exceeded.
      const provider = yield* strictOpenAi({ otherwise: reader, contextWindows: { "gpt-4.1-mini": 2000 } })
      const root = yield* tempProject(project(`{ context: { windows: { "openai:gpt-4.1-mini": 2000 } } }`))
      const server = yield* startServer(root, { model: OpenAi.make({ model: "gpt-4.1-mini", apiKey: "test", baseURL: provider.url }) })
      const message = `read page 1. ${"Please read it very carefully. ".repeat(300)}`
      const created = yield* http(`${server.url}/api/runs`, { body: { agent: "reader", message } })
      const { runId } = created.json as { runId: string }
      const run = yield* waitForRun(server.url, runId)
      const tokens = Math.ceil(message.length / 4)
      expect(run).toMatchObject({ status: "failed" })
      expect((run as { error?: string }).error).toBe(
        `the user's message is about ${tokens} tokens (at about four characters a token), over the context window of openai:gpt-4.1-mini ` +
          `(2000 tokens, from context.windows in foundry.config.ts): no compaction can make it fit. Send a shorter message, ` +
          `or give agent "reader" a model with a larger window (its model in agents/reader/agent.ts)`
      )
      expect(provider.requests.filter((r) => JSON.stringify(r).includes("read page 1."))).toEqual([])
      const events = yield* eventsOf(server.url, runId)
      expect(events.filter((e) => e.type === "context.compacted")).toEqual([])
      // Refused, the message is not in the conversation: a shorter one then goes on in it.
      const conversation = (created.json as { conversationId: string }).conversationId
      expect(JSON.stringify((yield* http(`${server.url}/api/conversations/${conversation}/messages`)).json)).not.toContain("read page 1.")
      const next = yield* http(`${server.url}/api/runs`, { body: { agent: "reader", message: "read page 2.", conversation } })
      expect(yield* waitForRun(server.url, (next.json as { runId: string }).runId)).toMatchObject({ status: "completed", output: "read 1 page" })
    }))

  it.scopedLive("a message within the window alone but over it with the agent's instructions and tools fails its run before it is sent, and stays out of the conversation", () =>
    Effect.gen(function*() {
      const provider = yield* strictOpenAi({ otherwise: reader, contextWindows: { "gpt-4.1-mini": 2000 } })
      const files = project(`{ context: { windows: { "openai:gpt-4.1-mini": 2000 } } }`)
      // About 800 tokens of instructions, sent with every request of a run.
      const instructions = "Read the page the user asks for and say how many pages you read. ".repeat(50)
      const root = yield* tempProject({
        ...files,
        "agents/reader/agent.ts": (files["agents/reader/agent.ts"] ?? "").replace("maxTurns: 4", `maxTurns: 4, instructions: ${JSON.stringify(instructions)}`)
      })
      const server = yield* startServer(root, { model: OpenAi.make({ model: "gpt-4.1-mini", apiKey: "test", baseURL: provider.url }) })
      // About 1,500 tokens: within the window of 2,000 alone.
      const message = `read page 1. ${"Please read it very carefully. ".repeat(200)}`
      const first = yield* ask(server.url, message)
      const tokens = Math.ceil(message.length / 4)
      const carried = Math.ceil(instructions.length / 4)
      expect(tokens).toBeLessThan(2000)
      expect(first.run).toMatchObject({ status: "failed" })
      const error = (first.run as { error?: string }).error ?? ""
      const [, total, tools, room] = (/^the user's message is about \d+ tokens, about (\d+) with .* the tools' descriptions \(about (\d+)\) .* at most about (\d+) tokens/.exec(error) ?? []).map(Number)
      expect(error).toBe(
        `the user's message is about ${tokens} tokens, about ${total} with the agent's instructions (about ${carried}) and the tools' descriptions ` +
          `(about ${tools}) that every request of its run carries (at about four characters a token), over the context window of openai:gpt-4.1-mini ` +
          `(2000 tokens, from context.windows in foundry.config.ts): no compaction can make it fit. Send a message of at most about ${room} tokens, ` +
          `or give agent "reader" a model with a larger window (its model in agents/reader/agent.ts)`
      )
      // Each count rounded up on its own: the sum and the room are within a token or two of the parts'.
      expect(Math.abs((total ?? 0) - (tokens + carried + (tools ?? 0)))).toBeLessThanOrEqual(2)
      expect(Math.abs((room ?? 0) - (2000 - carried - (tools ?? 0)))).toBeLessThanOrEqual(2)
      expect(total).toBeGreaterThan(2000)
      expect(provider.requests).toEqual([])
      expect(JSON.stringify((yield* http(`${server.url}/api/conversations/${first.conversation}/messages`)).json)).not.toContain("read page 1.")
      const next = yield* ask(server.url, "read page 2 of 100 characters", first.conversation)
      expect(next.run).toMatchObject({ status: "completed", output: "read 1 page" })
      expect(provider.rejected).toEqual([])
    }))

  it.scopedLive("a context-length error from the provider is recovered by compaction and one more try", () =>
    Effect.gen(function*() {
      // The provider's window is small; Foundry is told a large one, so only the provider's error can trigger compaction.
      const provider = yield* strictOpenAi({ otherwise: reader, contextWindows: { "gpt-4.1-mini": 4000 } })
      const root = yield* tempProject(project(`{ context: { windows: { "openai:gpt-4.1-mini": 1000000 } } }`))
      const server = yield* startServer(root, { model: OpenAi.make({ model: "gpt-4.1-mini", apiKey: "test", baseURL: provider.url }) })
      const { runIds } = yield* converse(server.url, 6)
      const events = (yield* Effect.forEach(runIds, (id) => eventsOf(server.url, id))).flat()
      expect(events.map((e) => e.type)).toContain("context.compacting")
      expect(events.filter((e) => e.type === "run.failed")).toEqual([])
    }))
  it.scopedLive("a tool result larger than the window is cut to a quarter of it as it is recorded: its run completes, and so does the conversation's next message", () =>
    Effect.gen(function*() {
      const provider = yield* strictOpenAi({ otherwise: reader, contextWindows: { "gpt-4.1-mini": 3000 } })
      const root = yield* tempProject(project(`{ context: { windows: { "openai:gpt-4.1-mini": 3000 } } }`))
      const server = yield* startServer(root, { model: OpenAi.make({ model: "gpt-4.1-mini", apiKey: "test", baseURL: provider.url }) })
      // About 7,500 tokens of result, over the whole window: cut once, by the smaller of its limits (toolOutputLimit is 16,000).
      const first = yield* ask(server.url, "read page 1 of 30000 characters")
      expect(first.run).toMatchObject({ status: "completed", output: "read 1 page" })
      const full = `page 1: ${"lorem ipsum ".repeat(2500)}`
      const sent = provider.requests.flatMap((r) => (r as { messages: ReadonlyArray<{ role: string; content: string }> }).messages)
        .find((m) => m.role === "tool")
      expect(sent?.content).toBe(
        `${full.slice(0, 3000)}\n[output truncated: ${full.length - 3000} of ${full.length} characters cut (a tool result may fill at most a quarter ` +
          `of the model's context window, 3000 characters): call the tool again for a smaller part to see the rest]`
      )
      // The event keeps all of it.
      const completed = (yield* eventsOf(server.url, first.runId)).find((e) => e.type === "tool.call.completed")
      expect((completed?.data as { output: string }).output).toBe(full)
      const next = yield* ask(server.url, "read page 2 of 100 characters", first.conversation)
      expect(next.run).toMatchObject({ status: "completed", output: "read 1 page" })
    }))

  it.scopedLive("a tool result larger than the window that a /v1 client sends is cut the same way: its run completes, and so does the conversation's next message", () =>
    Effect.gen(function*() {
      const provider = yield* strictOpenAi({ otherwise: reader, contextWindows: { "gpt-4.1-mini": 3000 } })
      const root = yield* tempProject(project(`{ context: { windows: { "openai:gpt-4.1-mini": 3000 } } }`))
      const server = yield* startServer(root, { model: OpenAi.make({ model: "gpt-4.1-mini", apiKey: "test", baseURL: provider.url }) })
      const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "not-needed-on-loopback", maxRetries: 0 })
      // The client ran the tool itself: about 7,500 tokens of result, over the whole window.
      const full = `page 1: ${"lorem ipsum ".repeat(2500)}`
      const { data, response } = yield* Effect.promise(() =>
        client.chat.completions.create({
          model: "reader",
          messages: clientRanFetchPage(full, "read page 2 of 100 characters")
        }).withResponse()
      )
      expect(data.choices[0]?.message.content).toBe("read 1 page")
      const sent = provider.requests.flatMap((r) => (r as { messages: ReadonlyArray<{ role: string; content: string }> }).messages)
        .find((m) => m.role === "tool" && m.content.startsWith("page 1:"))
      expect(sent?.content).toBe(
        `${full.slice(0, 3000)}\n[output truncated: ${full.length - 3000} of ${full.length} characters cut (a tool result may fill at most a quarter ` +
          `of the model's context window, 3000 characters): call the tool again for a smaller part to see the rest]`
      )
      // The run's queued event keeps all of it.
      const runId = response.headers.get("x-foundry-run") ?? ""
      const queued = (yield* eventsOf(server.url, runId)).find((e) => e.type === "run.queued")
      expect(queued?.data).toMatchObject({ cutToolResults: [{ toolCallId: "call_client", tool: "fetch-page", output: full }] })
      // The conversation goes on, named by the header the answer carried.
      const conversation = response.headers.get("x-foundry-conversation") ?? ""
      const next = yield* Effect.promise(() =>
        client.chat.completions.create(
          { model: "reader", messages: [{ role: "user", content: "read page 3 of 100 characters" }] },
          { headers: { "x-foundry-conversation": conversation } }
        )
      )
      expect(next.choices[0]?.message.content).toBe("read 1 page")
      expect(provider.rejected).toEqual([])
    }))

  it.scopedLive("a run that outgrows the window by itself shortens the results it has acted on, oldest first, and completes", () =>
    Effect.gen(function*() {
      // One message, eight pages of about 625 tokens each, in a window of 5,000: the run's own results add up past it.
      const pages = 8
      const longReader: ReplyFn = (request) => {
        const lastUser = request.messages.findLastIndex((m) => m.role === "user")
        const read = request.messages.slice(lastUser + 1).filter((m) => m.role === "tool").length
        return read < pages
          ? toolCalls({ id: `call_${read + 1}`, name: "fetch-page", arguments: JSON.stringify({ page: read + 1, size: 2500 }) })
          : text(`read ${read} pages`)
      }
      const provider = yield* strictOpenAi({ otherwise: longReader, contextWindows: { "gpt-4.1-mini": 5000 } })
      const files = project(`{ context: { windows: { "openai:gpt-4.1-mini": 5000 } } }`)
      const root = yield* tempProject({ ...files, "agents/reader/agent.ts": (files["agents/reader/agent.ts"] ?? "").replace("maxTurns: 4", "maxTurns: 12") })
      const server = yield* startServer(root, { model: OpenAi.make({ model: "gpt-4.1-mini", apiKey: "test", baseURL: provider.url }) })
      const first = yield* ask(server.url, `read pages 1 to ${pages}`)
      expect(first.run).toMatchObject({ status: "completed", output: `read ${pages} pages` })
      const last = provider.requests.at(-1) as { messages: ReadonlyArray<{ role: string; content: string }> }
      const results = last.messages.filter((m) => m.role === "tool").map((m) => m.content)
      expect(results).toHaveLength(pages)
      // The newest result is whole (the model has not acted on it); the oldest are notes saying how to get them again.
      expect(results.at(-1)).toMatch(/^page 8: (lorem ipsum )+/)
      expect(results[0]).toBe("[elided to save context: 2508 characters; call fetch-page again if you need this result]")
      const whole = results.filter((content) => content.startsWith("page "))
      expect(whole.length).toBeGreaterThan(1)
      // Only as many as it takes: every elided one is older than every whole one.
      expect(results.slice(0, pages - whole.length).every((content) => content.startsWith("[elided"))).toBe(true)
      const events = yield* eventsOf(server.url, first.runId)
      expect(events.filter((e) => e.type === "context.compacted").map((e) => (e.data as { method: string }).method)).toContain("elide-earlier")
      // Nothing came before the run's message: no summary was asked.
      expect(provider.requests.filter(isSummaryRequest)).toEqual([])
    }))

  it.scopedLive("a summary request is sent in pieces that each fit the summary model's window, each carrying the summary so far", () =>
    Effect.gen(function*() {
      // The summary model's window (2,000) is smaller than what comes before the message when the
      // agent's model (5,000) reaches its hard threshold: sent whole, OpenAI would refuse the summary request.
      const provider = yield* strictOpenAi({ otherwise: reader, contextWindows: { "gpt-4.1-nano": 2000 } })
      const server = yield* serverOnOpenAi(provider.url, `{ context: { windows: { "openai:gpt-4.1-mini": 5000, "openai:gpt-4.1-nano": 2000 }, summaryModel: "openai:gpt-4.1-nano" } }`)
      const { conversation } = yield* converse(server.url, 10)
      const summaries = provider.requests.filter(isSummaryRequest)
      expect(summaries.some((r) => JSON.stringify(r).includes("summary of the conversation so far:\\n\\nsummary: pages were read"))).toBe(true)
      const stored = (yield* http(`${server.url}/api/conversations/${conversation}/messages`)).json as ReadonlyArray<{ readonly role: string }>
      expect(stored.some((m) => m.role === "summary")).toBe(true)
    }))

  it.scopedLive("a message nearly the size of the window is cut to its start in the summary request: the conversation goes on", () =>
    goesOnAfterALongMessage(3000))

  it.scopedLive("a summary request the provider refuses as too long (its window is smaller than Foundry was told) is sent again in halves", () =>
    goesOnAfterALongMessage(1_000_000))
})
