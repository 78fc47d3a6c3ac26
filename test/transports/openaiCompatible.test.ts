/**
 * The OpenAI-compatible API through the official `openai` client, against a real server whose
 * agent calls a tool inside each run: completions streamed and not, conversations kept by the
 * server or seeded from the request, the model list, and errors in OpenAI's shape.
 */
import Database from "better-sqlite3"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import OpenAI from "openai"
import { type ChatMessage, type LanguageModel, type ModelChunk, ModelError, type ModelRequest } from "../../src/models/Model.js"
import * as Scripted from "../../src/models/scripted.js"
import { http, startServer } from "../support/server.js"
import { agentFile, tempProject, toolFile } from "../support/tempProject.js"

const project = {
  "agents/echo/agent.ts": agentFile({ tools: ["echo"], imports: `import echo from "./tools/echo.tool.js"` }),
  "agents/echo/tools/echo.tool.ts": toolFile(),
  "agents/guarded/agent.ts": agentFile({ tools: ["guarded"], imports: `import guarded from "./tools/guarded.tool.js"` }),
  "agents/guarded/tools/guarded.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Echo the text back, once a person agrees",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  approval: "always",
  run: ({ text }) => Effect.succeed(text)
})
`,
  // Asks guarded, as its subagent: the approval is its child run's.
  "agents/boss/agent.ts": `import { defineAgent, Scripted } from "foundry"
import guarded from "../guarded/agent.js"
export default defineAgent({
  description: "Delegates to guarded",
  subagents: [guarded],
  model: Scripted.make([{ toolCalls: [{ name: "ask-guarded", arguments: { message: "please" } }] }, { text: "done" }])
})
`,
  // Goes over its budget in its first turn, which calls a tool, and asks a person whether to go on.
  "agents/spender/agent.ts": `import { defineAgent, Scripted } from "foundry"
import echo from "../echo/tools/echo.tool.js"
export default defineAgent({
  description: "Spends more than its budget",
  tools: [echo],
  budget: { maxTokensPerRun: 1, onExceeded: "ask" },
  model: Scripted.make([{ toolCalls: [{ name: "echo", arguments: { text: "spend" } }] }, { text: "spent" }])
})
`
}

const lastUser = (messages: ReadonlyArray<ChatMessage>) => messages.findLast((m) => m._tag === "user")?.content ?? ""

/**
 * Turn 1 calls the agent's tool with the user's last message; turn 2 answers with the tool's
 * result, streamed in paced deltas. Every request the model is sent is kept, to see the transcript.
 */
const echoingModel = () => {
  const sent: Array<ModelRequest> = []
  const model = Scripted.make((request, index) => {
    sent.push(request)
    const tool = request.tools[0]?.name ?? "echo"
    if (lastUser(request.messages) === "fail please") return { error: { kind: "permanent", message: "the provider refused the request" } }
    // A model may write a sentence before its tool calls: it is part of the answer.
    const preface = lastUser(request.messages).startsWith("check:") ? "Let me check." : ""
    if (index === 0) return { text: preface, toolCalls: [{ name: tool, arguments: { text: lastUser(request.messages) } }] }
    const result = request.messages[request.messages.length - 1]
    return { text: `The echo tool said: ${result?._tag === "tool" ? result.content : "nothing"}`, chunkDelay: "2 millis" }
  }, "echoing")
  return { model, sent }
}

const serve = Effect.gen(function*() {
  const root = yield* tempProject(project)
  const { model, sent } = echoingModel()
  const server = yield* startServer(root, { model })
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "not-needed-on-loopback", maxRetries: 0 })
  return { server, client, sent }
})

/**
 * A model whose first attempt writes "Partial" and then fails as a passing outage would; asked
 * again, it answers "Full answer". The first word waits a moment, so that the client follows the
 * run before it is written.
 */
const failingMidwayModel = (): LanguageModel => {
  const answer = Scripted.make([{ text: "Full answer" }], "midway")
  const partial: ModelChunk = { _tag: "TextDelta", text: "Partial" }
  let attempts = 0
  return {
    name: answer.name,
    stream: (request) => {
      attempts++
      if (attempts > 1) return answer.stream(request)
      return Stream.concat(
        Stream.fromEffect(Effect.as(Effect.sleep("300 millis"), partial)),
        Stream.fail(new ModelError({ model: answer.name, kind: "transient", status: 503, message: "overloaded in the middle of the answer" }))
      )
    }
  }
}

/** The first request of the run whose last user message is `text`: the transcript it starts from. */
const firstRequestFor = (sent: ReadonlyArray<ModelRequest>, text: string) =>
  sent.find((request) => lastUser(request.messages) === text && Scripted.turnIndex(request.messages) === 0)

const roles = (messages: ReadonlyArray<ChatMessage> | undefined) =>
  (messages ?? []).map((m) => m._tag === "assistant" && m.toolCalls.length > 0 ? "assistant(calls)" : m._tag === "summary" ? "summary" : `${m._tag}: ${m.content}`)

describe("the OpenAI-compatible API", () => {
  it.scopedLive("a non-streamed completion is OpenAI's chat.completion, answered by a run that called a tool", () =>
    Effect.gen(function*() {
      const { client, server } = yield* serve
      const { data, response } = yield* Effect.promise(() =>
        client.chat.completions.create({ model: "echo", messages: [{ role: "user", content: "hello there" }] }).withResponse()
      )
      expect(data).toMatchObject({
        object: "chat.completion",
        model: "echo",
        choices: [{ index: 0, message: { role: "assistant", content: "The echo tool said: hello there" }, finish_reason: "stop" }],
        // Two scripted turns of 10 prompt and 5 completion tokens each.
        usage: { prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 }
      })
      expect(data.id).toMatch(/^chatcmpl-run_/)
      expect(data.created).toBeGreaterThan(1_700_000_000)
      expect(response.headers.get("x-foundry-conversation")).toMatch(/^conv_/)
      const runId = response.headers.get("x-foundry-run") ?? ""
      expect(data.id).toBe(`chatcmpl-${runId}`)
      const events = yield* http(`${server.url}/api/runs/${runId}/events`)
      const types = (events.json as Array<{ type: string; data: Record<string, unknown> }>).map((e) => e.type)
      expect(types).toEqual(expect.arrayContaining(["tool.call.completed", "run.completed"]))
    }))

  it.scopedLive("a streamed completion sends the role, the text as deltas, finish_reason, the usage and [DONE]", () =>
    Effect.gen(function*() {
      const { client } = yield* serve
      const chunks = yield* Effect.promise(async () => {
        const stream = await client.chat.completions.create({
          model: "echo",
          messages: [{ role: "user", content: "stream this reply" }],
          stream: true,
          stream_options: { include_usage: true }
        })
        const all: Array<OpenAI.ChatCompletionChunk> = []
        // The loop ends only when the client has read `data: [DONE]`.
        for await (const chunk of stream) all.push(chunk)
        return all
      })
      expect(chunks[0]?.choices[0]?.delta.role).toBe("assistant")
      for (const chunk of chunks) {
        expect(chunk).toMatchObject({ object: "chat.completion.chunk", model: "echo", id: chunks[0]?.id })
      }
      const deltas = chunks.flatMap((chunk) => chunk.choices.flatMap((choice) => choice.delta.content ? [choice.delta.content] : []))
      expect(deltas.join("")).toBe("The echo tool said: stream this reply")
      expect(deltas.length).toBeGreaterThan(3)
      const finishing = chunks.filter((chunk) => chunk.choices[0]?.finish_reason === "stop")
      expect(finishing).toHaveLength(1)
      const last = chunks[chunks.length - 1]
      expect(last?.choices).toEqual([])
      expect(last?.usage).toEqual({ prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 })
      // Every chunk before the last says `usage: null`, as OpenAI sends them.
      expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true)
    }))

  it.scopedLive("streamed or not, the answer is every turn's text, a turn before the tool call set apart", () =>
    Effect.gen(function*() {
      const { client } = yield* serve
      const messages = [{ role: "user" as const, content: "check: the weather" }]
      const whole = yield* Effect.promise(() => client.chat.completions.create({ model: "echo", messages }))
      const streamed = yield* Effect.promise(async () => {
        let text = ""
        for await (const chunk of await client.chat.completions.create({ model: "echo", messages, stream: true })) {
          text += chunk.choices[0]?.delta.content ?? ""
        }
        return text
      })
      expect(whole.choices[0]?.message.content).toBe("Let me check.\n\nThe echo tool said: check: the weather")
      expect(streamed).toBe(whole.choices[0]?.message.content)
    }))

  it.scopedLive("a non-streamed answer has only the text of the attempt that counted, not of one that failed and was retried", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/midway/agent.ts": `import { defineAgent } from "foundry"
export default defineAgent({ description: "Answers on the second attempt", model: "demo" })
`,
        "foundry.config.ts": `import { defineConfig } from "foundry"
export default defineConfig({ modelRetry: { times: 2, base: "1 millis", max: "1 millis" } })
`
      })
      const server = yield* startServer(root, { model: failingMidwayModel() })
      const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "not-needed-on-loopback", maxRetries: 0 })
      const { data, response } = yield* Effect.promise(() =>
        client.chat.completions.create({ model: "midway", messages: [{ role: "user", content: "hello" }], stream: false }).withResponse()
      )
      expect(data.choices[0]?.message.content).toBe("Full answer")
      // The failed attempt was written and retried: the answer left it out, not the run.
      const events = yield* http(`${server.url}/api/runs/${response.headers.get("x-foundry-run") ?? ""}/events`)
      const types = (events.json as Array<{ type: string }>).map((e) => e.type)
      expect(types).toEqual(expect.arrayContaining(["model.retry", "run.completed"]))
    }))

  it.scopedLive("the OpenAPI document describes /v1, with the event stream of a streamed completion", () =>
    Effect.gen(function*() {
      const { server } = yield* serve
      const spec = (yield* http(`${server.url}/api/openapi.json`)).json as {
        paths: Record<string, Record<string, { responses: Record<string, { content: Record<string, { schema: unknown }> }> }>>
      }
      expect(spec.paths["/v1/models"]?.get?.responses["200"]?.content["application/json"]).toBeDefined()
      const chat = spec.paths["/v1/chat/completions"]?.post
      expect(Object.keys(chat?.responses["200"]?.content ?? {})).toEqual(["application/json", "text/event-stream"])
      expect(chat?.responses["200"]?.content["text/event-stream"]?.schema).toMatchObject({
        properties: { object: { enum: ["chat.completion.chunk"] } }
      })
      expect(chat?.responses["404"]?.content["application/json"]?.schema).toBeDefined()
    }))

  it.scopedLive("a conversation named by the header continues over three requests: the third run's model sees the earlier turns", () =>
    Effect.gen(function*() {
      const { client, sent } = yield* serve
      const ask = (content: string) =>
        Effect.promise(() =>
          client.chat.completions.create(
            { model: "echo", messages: [{ role: "user", content }] },
            { headers: { "x-foundry-conversation": "chat-with-echo" } }
          ).withResponse()
        )
      const answers: Array<string | null> = []
      for (const text of ["one", "two", "three"]) {
        const { data, response } = yield* ask(text)
        answers.push(data.choices[0]?.message.content ?? null)
        expect(response.headers.get("x-foundry-conversation")).toBe("chat-with-echo")
      }
      expect(answers).toEqual(["The echo tool said: one", "The echo tool said: two", "The echo tool said: three"])
      expect(roles(firstRequestFor(sent, "three")?.messages)).toEqual([
        "user: one",
        "assistant(calls)",
        "tool: one",
        "assistant: The echo tool said: one",
        "user: two",
        "assistant(calls)",
        "tool: two",
        "assistant: The echo tool said: two",
        "user: three"
      ])
    }))

  it.scopedLive("two first requests of a new conversation at once both land in it", () =>
    Effect.gen(function*() {
      const { client, server } = yield* serve
      const ask = (content: string) =>
        Effect.promise(() =>
          client.chat.completions.create(
            { model: "echo", messages: [{ role: "user", content }] },
            { headers: { "x-foundry-conversation": "both-at-once" } }
          )
        )
      const answers = yield* Effect.all([ask("left"), ask("right")], { concurrency: "unbounded" })
      expect(answers.map((answer) => answer.choices[0]?.message.content).sort()).toEqual(["The echo tool said: left", "The echo tool said: right"])
      const messages = yield* http(`${server.url}/api/conversations/both-at-once/messages`)
      expect((messages.json as Array<{ role: string }>).filter((m) => m.role === "user")).toHaveLength(2)
    }))

  it.scopedLive("the user field names the end user only: each request is taken as given, as OpenAI takes it", () =>
    Effect.gen(function*() {
      const { client, sent } = yield* serve
      const ask = (messages: Array<OpenAI.ChatCompletionMessageParam>) =>
        Effect.promise(() => client.chat.completions.create({ model: "echo", user: "alice@example.com", messages }).withResponse())
      const first = yield* ask([{ role: "user", content: "alice first" }])
      // A new chat of the same end user (an app that sends user for abuse tracking): not joined to the first.
      const fresh = yield* ask([{ role: "system", content: "Be terse." }, { role: "user", content: "alice fresh" }])
      expect(fresh.response.headers.get("x-foundry-conversation")).not.toBe(first.response.headers.get("x-foundry-conversation"))
      expect(roles(firstRequestFor(sent, "alice fresh")?.messages).filter((m) => m.startsWith("user"))).toEqual([
        "user: Instructions from the client (system message):\nBe terse.",
        "user: alice fresh"
      ])
      // The app keeps the history and sends it whole: it is read, not replaced by a conversation of the user's.
      yield* ask([
        { role: "user", content: "alice first" },
        { role: "assistant", content: "noted" },
        { role: "user", content: "alice second" }
      ])
      expect(roles(firstRequestFor(sent, "alice second")?.messages).filter((m) => !m.startsWith("assistant(calls)") && !m.startsWith("tool"))).toEqual([
        "user: alice first",
        "assistant: noted",
        "user: alice second"
      ])
    }))

  it.scopedLive("without a conversation the messages are taken as given: the earlier ones seed a new conversation", () =>
    Effect.gen(function*() {
      const { client, sent } = yield* serve
      const { data, response } = yield* Effect.promise(() =>
        client.chat.completions.create({
          model: "echo",
          messages: [
            { role: "system", content: "Answer briefly." },
            { role: "user", content: "What is 2 + 2?" },
            { role: "assistant", content: "4" },
            { role: "user", content: [{ type: "text", text: "And 3 + 3?" }] }
          ]
        }).withResponse()
      )
      expect(data.choices[0]?.message.content).toBe("The echo tool said: And 3 + 3?")
      expect(response.headers.get("x-foundry-conversation")).toMatch(/^conv_/)
      expect(roles(firstRequestFor(sent, "And 3 + 3?")?.messages)).toEqual([
        "user: Instructions from the client (system message):\nAnswer briefly.",
        "user: What is 2 + 2?",
        "assistant: 4",
        "user: And 3 + 3?"
      ])
      // The client's own tool calls and results are history like any message.
      yield* Effect.promise(() =>
        client.chat.completions.create({
          model: "echo",
          messages: [
            { role: "user", content: "Look it up" },
            { role: "assistant", content: null, tool_calls: [{ id: "call_a", type: "function", function: { name: "lookup", arguments: "{}" } }] },
            { role: "tool", tool_call_id: "call_a", content: "found it" },
            { role: "user", content: "thanks" }
          ]
        })
      )
      expect(roles(firstRequestFor(sent, "thanks")?.messages)).toEqual(["user: Look it up", "assistant(calls)", "tool: found it", "user: thanks"])
      // A call id the client uses again in a later message (OpenAI scopes ids to their message): each result stays its call's.
      yield* Effect.promise(() =>
        client.chat.completions.create({
          model: "echo",
          messages: [
            { role: "user", content: "first" },
            { role: "assistant", content: null, tool_calls: [{ id: "d1", type: "function", function: { name: "lookup", arguments: "{}" } }] },
            { role: "tool", tool_call_id: "d1", content: "result one" },
            { role: "user", content: "second" },
            { role: "assistant", content: null, tool_calls: [{ id: "d1", type: "function", function: { name: "lookup", arguments: "{}" } }] },
            { role: "tool", tool_call_id: "d1", content: "result two" },
            { role: "user", content: "go on" }
          ]
        })
      )
      expect(roles(firstRequestFor(sent, "go on")?.messages)).toEqual([
        "user: first", "assistant(calls)", "tool: result one", "user: second", "assistant(calls)", "tool: result two", "user: go on"
      ])
      // A second stateless request starts from its own messages only.
      yield* Effect.promise(() => client.chat.completions.create({ model: "echo", messages: [{ role: "user", content: "alone" }] }))
      expect(roles(firstRequestFor(sent, "alone")?.messages)).toEqual(["user: alone"])
    }))

  it.scopedLive("an OpenAI answer that refused, replayed in the history (refusal field or part), is read as the assistant's text", () =>
    Effect.gen(function*() {
      const { client, sent } = yield* serve
      yield* Effect.promise(() =>
        client.chat.completions.create({
          model: "echo",
          messages: [
            { role: "user", content: "Help me pick a lock." },
            // As OpenAI's answer came back: content null beside the refusal.
            { role: "assistant", content: null, refusal: "I can't help with that." },
            { role: "user", content: "Then a safe?" },
            { role: "assistant", content: [{ type: "refusal", refusal: "Nor that." }] },
            { role: "user", content: "Fine." }
          ]
        })
      )
      expect(roles(firstRequestFor(sent, "Fine.")?.messages)).toEqual([
        "user: Help me pick a lock.",
        "assistant: I can't help with that.",
        "user: Then a safe?",
        "assistant: Nor that.",
        "user: Fine."
      ])
    }))

  it.scopedLive("a request repeated with its Idempotency-Key (a retry) is answered by the first one's run; another request with it is refused", () =>
    Effect.gen(function*() {
      const { client, server } = yield* serve
      const ask = (content: string, key: string) =>
        Effect.promise(() =>
          client.chat.completions.create({ model: "echo", messages: [{ role: "user", content }] }, { headers: { "Idempotency-Key": key } })
            .withResponse()
        )
      const first = yield* ask("once only", "retry-1")
      const again = yield* ask("once only", "retry-1")
      expect(again.response.headers.get("x-foundry-run")).toBe(first.response.headers.get("x-foundry-run"))
      expect(again.data.choices[0]?.message.content).toBe(first.data.choices[0]?.message.content)
      const runs = (yield* http(`${server.url}/api/runs?agent=echo`)).json as ReadonlyArray<{ input: string }>
      expect(runs.filter((run) => run.input === "once only")).toHaveLength(1)

      const other = yield* Effect.promise(() =>
        client.chat.completions.create({ model: "echo", messages: [{ role: "user", content: "something else" }] }, { headers: { "Idempotency-Key": "retry-1" } })
          .then(() => undefined, (error: unknown) => error)
      )
      expect(other).toBeInstanceOf(OpenAI.BadRequestError)
      expect(other).toMatchObject({ code: "idempotency_key_reused", param: "idempotency-key" })
    }))

  it.scopedLive("a stateless request's history is part of what its Idempotency-Key names: another history with the key is refused", () =>
    Effect.gen(function*() {
      const { client } = yield* serve
      const request = (system: string) =>
        client.chat.completions.create({
          model: "echo",
          messages: [{ role: "system", content: system }, { role: "user", content: "same last message" }]
        }, { headers: { "Idempotency-Key": "history-1" } })
      const first = yield* Effect.promise(() => request("Answer in French.").withResponse())
      const again = yield* Effect.promise(() => request("Answer in French.").withResponse())
      expect(again.response.headers.get("x-foundry-run")).toBe(first.response.headers.get("x-foundry-run"))
      expect(again.data.choices[0]?.message.content).toBe(first.data.choices[0]?.message.content)
      const other = yield* Effect.promise(() => request("Answer in German.").then(() => undefined, (error: unknown) => error))
      expect(other).toBeInstanceOf(OpenAI.BadRequestError)
      expect(other).toMatchObject({ code: "idempotency_key_reused", param: "idempotency-key" })
    }))

  it.scopedLive("a retry after the run's events were pruned (retention) still answers with the run's output, streamed or not", () =>
    Effect.gen(function*() {
      const { client, server } = yield* serve
      const request = { model: "echo", messages: [{ role: "user" as const, content: "keep my answer" }] }
      const key = { headers: { "Idempotency-Key": "pruned-1" } }
      const first = yield* Effect.promise(() => client.chat.completions.create(request, key).withResponse())
      const answer = first.data.choices[0]?.message.content
      expect(answer).toBe("The echo tool said: keep my answer")
      const db = new Database(server.storeFile)
      const pruned = db.prepare("DELETE FROM foundry_events WHERE run_id = ?").run(first.response.headers.get("x-foundry-run"))
      db.close()
      expect(pruned.changes).toBeGreaterThan(0)
      const again = yield* Effect.promise(() => client.chat.completions.create(request, key))
      expect(again.choices[0]).toMatchObject({ message: { content: answer }, finish_reason: "stop" })
      const streamed = yield* Effect.promise(async () => {
        let text = ""
        for await (const chunk of await client.chat.completions.create({ ...request, stream: true }, key)) text += chunk.choices[0]?.delta.content ?? ""
        return text
      })
      expect(streamed).toBe(answer)
    }))

  it.scopedLive("models.list() lists every agent and every instance as agent@instance", () =>
    Effect.gen(function*() {
      const { client } = yield* serve
      yield* Effect.promise(() => client.chat.completions.create({ model: "echo@team-a", messages: [{ role: "user", content: "hi" }] }))
      const models = yield* Effect.promise(async () => {
        const all: Array<OpenAI.Model> = []
        for await (const model of client.models.list()) all.push(model)
        return all
      })
      expect(models.map((model) => model.id)).toEqual(["boss", "echo", "guarded", "spender", "echo@team-a"])
      for (const model of models) expect(model).toMatchObject({ object: "model", owned_by: "foundry", created: expect.any(Number) })
      // models.retrieve, as the client calls it; an unknown id is its NotFoundError.
      expect(yield* Effect.promise(() => client.models.retrieve("echo@team-a"))).toMatchObject({ id: "echo@team-a", object: "model" })
      const missing = yield* Effect.promise(() => client.models.retrieve("nobody").then(() => undefined, (error: unknown) => error))
      expect(missing).toBeInstanceOf(OpenAI.NotFoundError)
      expect(missing).toMatchObject({ code: "model_not_found" })
    }))

  it.scopedLive("an archived instance is no model any more", () =>
    Effect.gen(function*() {
      const { client, server } = yield* serve
      yield* Effect.promise(() => client.chat.completions.create({ model: "echo@gone", messages: [{ role: "user", content: "hi" }] }))
      expect((yield* http(`${server.url}/api/instances/gone?agent=echo`, { method: "DELETE" })).status).toBe(200)
      const ids = yield* Effect.promise(async () => {
        const all: Array<string> = []
        for await (const model of client.models.list()) all.push(model.id)
        return all
      })
      expect(ids).toEqual(["boss", "echo", "guarded", "spender"])
      const retrieved = yield* Effect.promise(() => client.models.retrieve("echo@gone").then(() => undefined, (error: unknown) => error))
      expect(retrieved).toBeInstanceOf(OpenAI.NotFoundError)
    }))

  it.scopedLive("a run that stops for an approval answers with what it waits for and how to decide it", () =>
    Effect.gen(function*() {
      const { client, server } = yield* serve
      const { data, response } = yield* Effect.promise(() =>
        client.chat.completions.create({ model: "guarded", messages: [{ role: "user", content: "please" }] }).withResponse()
      )
      const approvals = yield* http(`${server.url}/api/approvals?status=pending`)
      const [approval] = approvals.json as Array<{ id: string; runId: string }>
      expect(approval?.runId).toBe(response.headers.get("x-foundry-run"))
      expect(data.choices[0]).toMatchObject({ finish_reason: "stop" })
      expect(data.choices[0]?.message.content).toContain(`approval ${approval?.id}`)
      expect(data.choices[0]?.message.content).toContain(`POST /api/approvals/${approval?.id}`)

      // The approval of a subagent's run answers as well, streamed or not, rather than holding the client until it expires.
      const whole = yield* Effect.promise(() => client.chat.completions.create({ model: "boss", messages: [{ role: "user", content: "delegate" }] }))
      const streamed = yield* Effect.promise(async () => {
        let text = ""
        for await (const chunk of await client.chat.completions.create({ model: "boss", stream: true, messages: [{ role: "user", content: "delegate again" }] })) {
          text += chunk.choices[0]?.delta.content ?? ""
        }
        return text
      })
      const nested = ((yield* http(`${server.url}/api/approvals?status=pending&order=oldest`)).json as Array<{ id: string; runId: string }>).filter((a) => a.id !== approval?.id)
      expect(nested).toHaveLength(2)
      expect(whole.choices[0]?.message.content).toContain(`approval ${nested[0]?.id}`)
      expect(streamed).toContain(`approval ${nested[1]?.id}`)
    }))

  it.scopedLive("a run that stops on a budget's approval answers with it, rather than holding the client until it expires", () =>
    Effect.gen(function*() {
      const { client, server } = yield* serve
      const whole = yield* Effect.promise(() => client.chat.completions.create({ model: "spender", messages: [{ role: "user", content: "spend" }] }))
      const streamed = yield* Effect.promise(async () => {
        let text = ""
        for await (const chunk of await client.chat.completions.create({ model: "spender", stream: true, messages: [{ role: "user", content: "spend again" }] })) {
          text += chunk.choices[0]?.delta.content ?? ""
        }
        return text
      })
      const pending = (yield* http(`${server.url}/api/approvals?status=pending&order=oldest`)).json as Array<{ id: string; tool: string }>
      expect(pending.map((approval) => approval.tool)).toEqual(["budget:maxTokensPerRun", "budget:maxTokensPerRun"])
      expect(whole.choices[0]?.message.content).toContain(`the run went over its maxTokensPerRun budget, and going on needs a person's decision, approval ${pending[0]?.id}`)
      expect(streamed).toContain(`approval ${pending[1]?.id}`)
    }), 20_000)

  it.scopedLive("errors are OpenAI's: an unknown model is a NotFoundError, a bad body a BadRequestError, a failed run a 500 not retried", () =>
    Effect.gen(function*() {
      const { client, server } = yield* serve
      const unknown = yield* Effect.promise(() =>
        client.chat.completions.create({ model: "billing", messages: [{ role: "user", content: "hi" }] }).then(() => undefined, (error: unknown) => error)
      )
      expect(unknown).toBeInstanceOf(OpenAI.NotFoundError)
      expect(unknown).toMatchObject({ status: 404, code: "model_not_found", type: "invalid_request_error", param: "model" })
      expect(unknown).toMatchObject({ message: expect.stringContaining(`there is no agent "billing"`) })

      // Refused at the edge, before any /v1 handler: still OpenAI's shape.
      const huge = yield* Effect.promise(() =>
        client.chat.completions.create({ model: "echo", messages: [{ role: "user", content: "x".repeat(2 * 1024 * 1024) }] })
          .then(() => undefined, (error: unknown) => error)
      )
      expect(huge).toBeInstanceOf(OpenAI.APIError)
      expect(huge).toMatchObject({ status: 413, code: "payload_too_large", type: "invalid_request_error" })
      expect(huge).toMatchObject({ message: expect.stringContaining("server.bodyLimit") })

      const empty = yield* Effect.promise(() => client.chat.completions.create({ model: "echo", messages: [] }).then(() => undefined, (error: unknown) => error))
      expect(empty).toBeInstanceOf(OpenAI.BadRequestError)
      expect(empty).toMatchObject({ status: 400, type: "invalid_request_error", param: "messages" })

      // What the client counts on and an agent does not give is refused, not silently ignored.
      const required = yield* Effect.promise(() =>
        client.chat.completions.create({
          model: "echo",
          messages: [{ role: "user", content: "hi" }],
          tools: [{ type: "function", function: { name: "lookup", parameters: { type: "object", properties: {} } } }],
          tool_choice: "required"
        }).then(() => undefined, (error: unknown) => error)
      )
      expect(required).toBeInstanceOf(OpenAI.BadRequestError)
      expect(required).toMatchObject({ param: "tool_choice", message: expect.stringContaining("cannot be made to") })
      const json = yield* Effect.promise(() =>
        client.chat.completions.create({ model: "echo", messages: [{ role: "user", content: "hi" }], response_format: { type: "json_object" } })
          .then(() => undefined, (error: unknown) => error)
      )
      expect(json).toBeInstanceOf(OpenAI.BadRequestError)
      expect(json).toMatchObject({ param: "response_format.type", message: expect.stringContaining("an agent answers in text") })
      // The defaults a client may send as they are still answer.
      const defaults = yield* Effect.promise(() =>
        client.chat.completions.create({ model: "echo", messages: [{ role: "user", content: "hi" }], tool_choice: "auto", response_format: { type: "text" }, temperature: 0.2 })
      )
      expect(defaults.choices[0]?.finish_reason).toBe("stop")

      const endsWithAssistant = yield* Effect.promise(() =>
        client.chat.completions.create({ model: "echo", messages: [{ role: "user", content: "hi" }, { role: "assistant", content: "hello" }] })
          .then(() => undefined, (error: unknown) => error)
      )
      expect(endsWithAssistant).toBeInstanceOf(OpenAI.BadRequestError)
      expect(endsWithAssistant).toMatchObject({ param: "messages[1].role", message: expect.stringContaining("the last message must be the user's") })

      const unanswered = yield* Effect.promise(() =>
        client.chat.completions.create({
          model: "echo",
          messages: [
            { role: "assistant", content: null, tool_calls: [{ id: "call_a", type: "function", function: { name: "lookup", arguments: "{}" } }] },
            { role: "user", content: "hi" }
          ]
        }).then(() => undefined, (error: unknown) => error)
      )
      expect(unanswered).toBeInstanceOf(OpenAI.BadRequestError)
      expect(unanswered).toMatchObject({ param: "messages", message: expect.stringContaining("call_a have no result") })

      // A path under /v1 that is no route, and a method no route takes: OpenAI's shape, as the client reads it.
      const noRoute = yield* Effect.promise(() => client.get("/nope").then(() => undefined, (error: unknown) => error))
      expect(noRoute).toBeInstanceOf(OpenAI.NotFoundError)
      expect(noRoute).toMatchObject({ status: 404, code: "not_found", type: "invalid_request_error" })
      // A route taken with another method: 405, saying which it takes (RFC 9110's Allow).
      const wrongMethod = yield* http(`${server.url}/v1/models`, { method: "POST", body: {} })
      expect(wrongMethod.status).toBe(405)
      expect(wrongMethod.headers.get("allow")).toBe("GET")
      expect(wrongMethod.json).toEqual({
        error: { message: "POST is not how /v1/models is used: it takes GET", type: "invalid_request_error", param: null, code: "method_not_allowed" }
      })
      const wrongOnRuns = yield* http(`${server.url}/api/runs/run_x`, { method: "DELETE" })
      expect(wrongOnRuns.status).toBe(405)
      expect(wrongOnRuns.headers.get("allow")).toBe("GET")
      expect(wrongOnRuns.json).toEqual({ _tag: "MethodNotAllowed", message: "DELETE is not how /api/runs/run_x is used: it takes GET" })
      const wrongOnMcp = yield* http(`${server.url}/mcp`, { method: "PUT", body: {} })
      expect([wrongOnMcp.status, wrongOnMcp.headers.get("allow")]).toEqual([405, "DELETE, GET, POST"])

      // The exact body, as OpenAI sends it, for a body that is not JSON and a field of the wrong type.
      const notJson = yield* http(`${server.url}/v1/chat/completions`, { body: "{\"model\": " })
      expect(notJson.status).toBe(400)
      expect(notJson.json).toEqual({
        error: { message: expect.stringContaining("not valid JSON"), type: "invalid_request_error", param: null, code: "invalid_json" }
      })
      const wrongType = yield* http(`${server.url}/v1/chat/completions`, { body: { model: "echo", messages: [{ role: "user", content: 7 }] } })
      expect(wrongType.status).toBe(400)
      expect(wrongType.json).toEqual({
        error: {
          message: `messages[0].content: expected a string, or an array of { "type": "text", "text": "..." } parts`,
          type: "invalid_request_error",
          param: "messages[0].content",
          code: null
        }
      })

      const failed = yield* Effect.promise(() =>
        client.chat.completions.create({ model: "echo", messages: [{ role: "user", content: "fail please" }] }, { maxRetries: 2 })
          .then(() => undefined, (error: unknown) => error)
      )
      expect(failed).toBeInstanceOf(OpenAI.InternalServerError)
      expect(failed).toMatchObject({ status: 500, code: "run_failed", message: expect.stringContaining("the provider refused the request") })
      // The client was told not to retry: the failing run ran once.
      const runs = yield* http(`${server.url}/api/runs?agent=echo&status=failed`)
      expect(runs.json).toHaveLength(1)
      for (const { text } of [notJson, wrongType]) expect(text).not.toMatch(/\bat .*\.[jt]s:\d+/)
    }))

  it.scopedLive("a streamed run that fails sends OpenAI's in-stream error, which the client raises", () =>
    Effect.gen(function*() {
      const { client } = yield* serve
      const outcome = yield* Effect.promise(async () => {
        const stream = await client.chat.completions.create({ model: "echo", messages: [{ role: "user", content: "fail please" }], stream: true })
        try {
          for await (const _ of stream) { /* read to the end */ }
          return undefined
        } catch (error) {
          return error
        }
      })
      expect(outcome).toBeInstanceOf(OpenAI.APIError)
      expect(outcome).toMatchObject({ code: "run_failed", message: expect.stringContaining("the provider refused the request") })
    }))
})
