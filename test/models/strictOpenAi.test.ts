/**
 * The strict fake OpenAI server (test/support/strictOpenAi.ts), exercised through the real
 * `openai` SDK: its wire format must satisfy the SDK's own stream assembly, its errors must
 * surface as the SDK's `APIError`s, and its validation must reject what OpenAI rejects. Last,
 * the OpenAI adapter (src/models/openai.ts) runs against it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Stream } from "effect"
import OpenAI from "openai"
import { type ModelChunk, type ModelRequest, ToolCall } from "../../src/models/Model.js"
import * as OpenAiModel from "../../src/models/openai.js"
import * as StrictOpenAi from "../support/strictOpenAi.js"

const MODEL = "gpt-4.1-mini"

const clientFor = (server: StrictOpenAi.StrictOpenAi) =>
  new OpenAI({ apiKey: "test", baseURL: server.url, maxRetries: 0 })

/** Runs an SDK call, expecting it to fail with an `APIError`. */
const apiError = (call: () => Promise<unknown>) =>
  Effect.tryPromise({ try: call, catch: (cause) => cause }).pipe(
    Effect.flip,
    Effect.flatMap((cause) =>
      cause instanceof OpenAI.APIError
        ? Effect.succeed(cause)
        : Effect.dieMessage(`expected an OpenAI.APIError, got ${String(cause)}`)
    )
  )

/** Collects every chunk of a streamed completion. */
const streamed = (client: OpenAI, body: OpenAI.ChatCompletionCreateParamsStreaming) =>
  Effect.promise(async () => {
    const chunks: Array<OpenAI.ChatCompletionChunk> = []
    for await (const chunk of await client.chat.completions.create(body)) chunks.push(chunk)
    return chunks
  })

const weatherTool: OpenAI.ChatCompletionFunctionTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Current weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
  }
}

const timeTool: OpenAI.ChatCompletionFunctionTool = {
  type: "function",
  function: {
    name: "get_time",
    description: "Current time in a time zone",
    parameters: { type: "object", properties: { zone: { type: "string" } }, required: ["zone"] }
  }
}

const callOf = (id: string, name: string, args: string): OpenAI.ChatCompletionMessageFunctionToolCall => ({
  id,
  type: "function",
  function: { name, arguments: args }
})

/** An assistant message calling get_weather (call_w) and get_time (call_t). */
const twoCalls: OpenAI.ChatCompletionMessageParam = {
  role: "assistant",
  content: null,
  tool_calls: [
    callOf("call_w", "get_weather", "{\"city\":\"Paris\"}"),
    callOf("call_t", "get_time", "{\"zone\":\"Asia/Tokyo\"}")
  ]
}

const ask: OpenAI.ChatCompletionMessageParam = { role: "user", content: "Weather in Paris, time in Tokyo?" }

const missingResults =
  "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
  "The following tool_call_ids did not have response messages: "

const orphanTool =
  "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."

// ---------------------------------------------------------------------------------------------
// The wire format, through the SDK
// ---------------------------------------------------------------------------------------------

describe("strict fake OpenAI: replies", () => {
  it.scoped("streams a text reply as several deltas, then finish_reason, usage and [DONE]", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi({ replies: [StrictOpenAi.text("Hello, world! How are you?")] })

      const chunks = yield* streamed(clientFor(server), {
        model: MODEL,
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: "user", content: "Say hello" }]
      })

      const [first] = chunks
      expect(first?.object).toBe("chat.completion.chunk")
      expect(first?.choices[0]?.delta.role).toBe("assistant")
      const deltas = chunks.flatMap((c) => c.choices.flatMap((choice) => choice.delta.content ?? []))
      expect(deltas.filter((d) => d.length > 0).length).toBeGreaterThan(3)
      expect(deltas.join("")).toBe("Hello, world! How are you?")
      expect(chunks.flatMap((c) => c.choices.flatMap((choice) => choice.finish_reason ?? []))).toEqual(["stop"])

      // The usage chunk comes last, with no choices; every other chunk says `usage: null`.
      const last = chunks[chunks.length - 1]
      expect(last?.choices).toEqual([])
      expect(last?.usage?.completion_tokens).toBeGreaterThan(0)
      expect(last?.usage?.prompt_tokens).toBe(Math.ceil("Say hello".length / 4))
      expect(last?.usage?.total_tokens).toBe((last?.usage?.prompt_tokens ?? 0) + (last?.usage?.completion_tokens ?? 0))
      expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true)
      expect(server.requests).toEqual([{
        model: MODEL,
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: "user", content: "Say hello" }]
      }])
    }))

  it.scoped("sends no usage chunk without include_usage", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi({ replies: [StrictOpenAi.text("Hi there")] })

      const chunks = yield* streamed(clientFor(server), {
        model: MODEL,
        stream: true,
        messages: [{ role: "user", content: "Say hello" }]
      })

      expect(chunks.every((c) => c.choices.length === 1 && c.usage === undefined)).toBe(true)
      expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("Hi there")
    }))

  it.scoped("streams a tool call in fragments that the SDK's stream helper reassembles", () =>
    Effect.gen(function*() {
      const args = "{\"city\": \"Paris, France\", \"units\": \"celsius\"}"
      const server = yield* StrictOpenAi.strictOpenAi({
        replies: [StrictOpenAi.toolCalls({ id: "call_weather", name: "get_weather", arguments: args })]
      })

      const { completion, fragments, chunks } = yield* Effect.promise(async () => {
        const fragments: Array<string> = []
        const chunks: Array<OpenAI.ChatCompletionChunk> = []
        const stream = clientFor(server).chat.completions.stream({
          model: MODEL,
          stream_options: { include_usage: true },
          messages: [{ role: "user", content: "Weather in Paris?" }],
          tools: [weatherTool]
        })
        stream.on("tool_calls.function.arguments.delta", (event) => fragments.push(event.arguments_delta))
        stream.on("chunk", (chunk) => chunks.push(chunk))
        return { completion: await stream.finalChatCompletion(), fragments, chunks }
      })

      const [choice] = completion.choices
      expect(choice?.finish_reason).toBe("tool_calls")
      expect(choice?.message.content).toBeNull()
      expect(choice?.message.tool_calls).toEqual([
        { id: "call_weather", type: "function", function: { name: "get_weather", arguments: args } }
      ])
      expect(fragments.length).toBeGreaterThan(3)
      expect(fragments.join("")).toBe(args)
      expect(completion.usage?.prompt_tokens).toBeGreaterThan(0)

      // OpenAI's layout: the role rides on the first fragment, which names the call with empty
      // arguments; later fragments carry only the index and more arguments.
      const calls = chunks.flatMap((c) => c.choices.flatMap((x) => x.delta.tool_calls ?? []))
      expect(chunks[0]?.choices[0]?.delta).toEqual({
        role: "assistant",
        content: null,
        refusal: null,
        tool_calls: [{ index: 0, id: "call_weather", type: "function", function: { name: "get_weather", arguments: "" } }]
      })
      expect(calls.slice(1).every((c) => Object.keys(c).join() === "index,function" && c.index === 0)).toBe(true)
    }))

  it.scoped("streams parallel tool calls after text; accumulating the deltas by index reassembles them", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi({
        replies: [{
          _tag: "ToolCalls",
          text: "Checking both.",
          calls: [
            { name: "get_weather", arguments: "{\"city\":\"Paris\"}" },
            { name: "get_time", arguments: "{\"zone\":\"Asia/Tokyo\"}" }
          ]
        }]
      })

      const chunks = yield* streamed(clientFor(server), {
        model: MODEL,
        stream: true,
        messages: [ask],
        tools: [weatherTool, timeTool]
      })

      const calls = new Map<number, { id: string; name: string; arguments: string }>()
      let content = ""
      for (const chunk of chunks) {
        const delta = chunk.choices[0]?.delta
        content += delta?.content ?? ""
        for (const fragment of delta?.tool_calls ?? []) {
          const previous = calls.get(fragment.index) ?? { id: "", name: "", arguments: "" }
          calls.set(fragment.index, {
            id: fragment.id ?? previous.id,
            name: fragment.function?.name ?? previous.name,
            arguments: previous.arguments + (fragment.function?.arguments ?? "")
          })
        }
      }
      expect(content).toBe("Checking both.")
      // Generated ids are numbered per server.
      expect([...calls.values()]).toEqual([
        { id: "call_1", name: "get_weather", arguments: "{\"city\":\"Paris\"}" },
        { id: "call_2", name: "get_time", arguments: "{\"zone\":\"Asia/Tokyo\"}" }
      ])
      expect(chunks[chunks.length - 1]?.choices[0]?.finish_reason).toBe("tool_calls")
    }))

  it.scoped("answers without streaming with a chat.completion and usage", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi({
        replies: [
          StrictOpenAi.text("Bonjour!", { promptTokens: 21, completionTokens: 3 }),
          StrictOpenAi.toolCalls({ id: "call_x", name: "get_weather", arguments: "{\"city\":\"Paris\"}" })
        ]
      })
      const client = clientFor(server)

      const completion = yield* Effect.promise(() =>
        client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "Say hello in French" }] })
      )
      expect(completion.object).toBe("chat.completion")
      expect(completion.model).toBe(MODEL)
      expect(completion.choices).toEqual([{
        index: 0,
        message: { role: "assistant", content: "Bonjour!", refusal: null, annotations: [] },
        logprobs: null,
        finish_reason: "stop"
      }])
      expect(completion.usage).toMatchObject({ prompt_tokens: 21, completion_tokens: 3, total_tokens: 24 })

      const withTool = yield* Effect.promise(() =>
        client.chat.completions.create({ model: MODEL, messages: [ask], tools: [weatherTool] })
      )
      expect(withTool.choices[0]?.finish_reason).toBe("tool_calls")
      expect(withTool.choices[0]?.message.content).toBeNull()
      expect(withTool.choices[0]?.message.tool_calls).toEqual([callOf("call_x", "get_weather", "{\"city\":\"Paris\"}")])
    }))

  it.scoped("answers from the transcript with a reply function, and takes pushed steps", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi({
        otherwise: (request, index) => {
          const last = request.messages[request.messages.length - 1]
          return StrictOpenAi.text(`#${index} ${last?.role}: ${last?.content}`)
        }
      })
      const client = clientFor(server)
      const reply = (content: string) =>
        Effect.promise(() => client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content }] }))
          .pipe(Effect.map((c) => c.choices[0]?.message.content))

      expect(yield* reply("one")).toBe("#0 user: one")
      server.push(StrictOpenAi.rateLimited(), StrictOpenAi.text("pushed"))
      expect((yield* apiError(() => client.chat.completions.create({ model: MODEL, messages: [ask] }))).status)
        .toBe(429)
      expect(yield* reply("two")).toBe("pushed")
      expect(yield* reply("three")).toBe("#3 user: three")
    }))

  it.scoped("lists models", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi({ contextWindows: { "gpt-tiny": 100 } })

      const page = yield* Effect.promise(() => clientFor(server).models.list())

      expect(page.data.map((m) => m.id)).toEqual([MODEL, "gpt-tiny"])
      expect(page.data[0]).toMatchObject({ object: "model", owned_by: "system" })
    }))

  it.scoped("answers unknown routes, unparsable bodies and missing keys like OpenAI", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi()
      const post = (path: string, body: string, headers: Record<string, string> = { authorization: "Bearer k" }) =>
        Effect.promise(async () => {
          const response = await fetch(`${server.url}${path}`, { method: "POST", body, headers })
          const json: unknown = await response.json()
          return { status: response.status, body: json }
        })

      expect(yield* post("/nope", "{}")).toEqual({
        status: 404,
        body: { error: { message: "Invalid URL (POST /v1/nope)", type: "invalid_request_error", param: null, code: null } }
      })
      const unparsable = yield* post("/chat/completions", "{not json")
      expect(unparsable).toMatchObject({
        status: 400,
        body: { error: { message: expect.stringMatching(/^We could not parse the JSON body of your request\./) } }
      })
      const noKey = yield* post("/chat/completions", JSON.stringify({ model: MODEL, messages: [ask] }), {})
      expect(noKey).toMatchObject({
        status: 401,
        body: { error: { message: expect.stringMatching(/^You didn't provide an API key\./) } }
      })
      expect(server.requests).toEqual([{}, "{not json", { model: MODEL, messages: [ask] }])
    }))
})

// ---------------------------------------------------------------------------------------------
// Errors on command, and the context window
// ---------------------------------------------------------------------------------------------

describe("strict fake OpenAI: errors", () => {
  it.scoped("429 and 500 surface as OpenAI.APIError with their status and body", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi({
        replies: [StrictOpenAi.rateLimited(), StrictOpenAi.serverError(), StrictOpenAi.text("recovered")]
      })
      const client = clientFor(server)
      const body: OpenAI.ChatCompletionCreateParamsStreaming = { model: MODEL, stream: true, messages: [ask] }

      const limited = yield* apiError(() => client.chat.completions.create(body))
      expect(limited).toBeInstanceOf(OpenAI.RateLimitError)
      expect(limited.status).toBe(429)
      expect(limited.code).toBe("rate_limit_exceeded")
      expect(limited.type).toBe("requests")
      expect(limited.message).toMatch(/^429 Rate limit reached for gpt-4\.1-mini/)
      expect(limited.requestID).toBe("req_fake1")

      const failed = yield* apiError(() => client.chat.completions.create(body))
      expect(failed).toBeInstanceOf(OpenAI.InternalServerError)
      expect(failed.status).toBe(500)
      expect(failed.error).toEqual({
        message: "The server had an error while processing your request. Sorry about that!",
        type: "server_error",
        param: null,
        code: null
      })

      // No retries (maxRetries: 0): three requests, three scripted steps.
      const text = (yield* streamed(client, body)).map((c) => c.choices[0]?.delta.content ?? "").join("")
      expect(text).toBe("recovered")
      expect(server.requests).toHaveLength(3)
    }))

  it.scoped("returns the context-length error on command", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi({ replies: [StrictOpenAi.contextLengthExceeded(8192, 9000)] })

      const error = yield* apiError(() => clientFor(server).chat.completions.create({ model: MODEL, messages: [ask] }))

      expect(error).toBeInstanceOf(OpenAI.BadRequestError)
      expect(error.error).toEqual({
        message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 " +
          "tokens. Please reduce the length of the messages.",
        type: "invalid_request_error",
        param: "messages",
        code: "context_length_exceeded"
      })
    }))

  it.scoped("rejects a transcript longer than the model's context window, without using a reply", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi({
        contextWindows: { [MODEL]: 10 },
        replies: [StrictOpenAi.text("fits")]
      })
      const client = clientFor(server)
      const long = "x".repeat(41) // ceil(41 / 4) = 11 tokens

      const error = yield* apiError(() =>
        client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: long }] })
      )
      expect(error.status).toBe(400)
      expect(error.code).toBe("context_length_exceeded")
      expect(error.error).toMatchObject({
        message: "This model's maximum context length is 10 tokens. However, your messages resulted in 11 tokens. " +
          "Please reduce the length of the messages."
      })

      const fits = yield* Effect.promise(() =>
        client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x".repeat(40) }] })
      )
      expect(fits.choices[0]?.message.content).toBe("fits")
      expect(fits.usage?.prompt_tokens).toBe(10)
    }))

  it("estimates tokens from contents, tool-call arguments and tool schemas", () => {
    const tool = { name: "t", description: "d", parameters: { type: "object" } }
    expect(StrictOpenAi.estimateTokens({
      messages: [
        { role: "user", content: "abcd" },
        { role: "assistant", content: null, toolCalls: [{ id: "c", name: "t", arguments: "{}" }] },
        { role: "tool", toolCallId: "c", content: "ab" }
      ],
      tools: [tool]
    })).toBe(Math.ceil((4 + 2 + 2 + JSON.stringify(tool).length) / 4))
  })

  it.scoped("answers a 400 when the script runs out, so a test cannot hang on it", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi()

      const error = yield* apiError(() => clientFor(server).chat.completions.create({ model: MODEL, messages: [ask] }))

      expect(error.status).toBe(400)
      expect(error.code).toBe("fake_script_exhausted")
    }))
})

// ---------------------------------------------------------------------------------------------
// Transcript validation
// ---------------------------------------------------------------------------------------------

describe("strict fake OpenAI: validation through the SDK", () => {
  /** Sends `messages` (with both tools offered) and returns the 400, expecting one. */
  const rejection = (server: StrictOpenAi.StrictOpenAi, messages: Array<OpenAI.ChatCompletionMessageParam>) =>
    apiError(() =>
      clientFor(server).chat.completions.create({ model: MODEL, messages, tools: [weatherTool, timeTool] })
    ).pipe(Effect.tap((error) => expect(error).toBeInstanceOf(OpenAI.BadRequestError)))

  it.scoped("rejects assistant tool_calls followed by a user message, naming the missing ids", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi({ replies: [StrictOpenAi.text("never sent")] })

      const error = yield* rejection(server, [ask, twoCalls, { role: "user", content: "Well?" }])

      expect(error.status).toBe(400)
      expect(error.error).toEqual({
        message: `${missingResults}call_w, call_t`,
        type: "invalid_request_error",
        param: "messages.[1].role",
        code: null
      })
      expect(server.rejected).toEqual([error.error])
    }))

  it.scoped("rejects a tool message that answers no call", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi()

      const error = yield* rejection(server, [ask, { role: "tool", tool_call_id: "call_w", content: "sunny" }])

      expect(error.error).toMatchObject({ message: orphanTool, param: "messages.[1].role" })
    }))

  it.scoped("rejects a tool message after the assistant's text instead of its calls", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi()

      const error = yield* rejection(server, [
        ask,
        twoCalls,
        { role: "tool", tool_call_id: "call_w", content: "sunny" },
        { role: "tool", tool_call_id: "call_t", content: "09:00" },
        { role: "assistant", content: "Sunny, and 9am." },
        { role: "tool", tool_call_id: "call_t", content: "09:00" }
      ])

      expect(error.error).toMatchObject({ message: orphanTool, param: "messages.[5].role" })
    }))

  it.scoped("rejects a transcript missing one of two tool results", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi()

      const beforeUser = yield* rejection(server, [
        ask,
        twoCalls,
        { role: "tool", tool_call_id: "call_t", content: "09:00" },
        { role: "user", content: "And?" }
      ])
      expect(beforeUser.error).toMatchObject({ message: `${missingResults}call_w`, param: "messages.[1].role" })

      // Also when the transcript simply ends there.
      const atEnd = yield* rejection(server, [ask, twoCalls, { role: "tool", tool_call_id: "call_w", content: "sunny" }])
      expect(atEnd.message).toBe(`400 ${missingResults}call_t`)
    }))

  it.scoped("rejects a result for a call the assistant message did not make, and a duplicate result", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi()
      const weather: OpenAI.ChatCompletionMessageParam = { role: "tool", tool_call_id: "call_w", content: "sunny" }

      const unknown = yield* rejection(server, [ask, twoCalls, weather, {
        role: "tool",
        tool_call_id: "call_nope",
        content: "?"
      }])
      expect(unknown.error).toMatchObject({
        message: "Invalid parameter: 'tool_call_id' of 'call_nope' not found in 'tool_calls' of previous message.",
        param: "messages.[3].tool_call_id"
      })

      const duplicate = yield* rejection(server, [ask, twoCalls, weather, weather])
      expect(duplicate.error).toMatchObject({ param: "messages.[3].tool_call_id" })
      expect(duplicate.message).toContain("'call_w' already has a response message")
    }))

  it.scoped("accepts the results of both calls in either order", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi({
        otherwise: (request) => StrictOpenAi.text(`${request.messages.length} messages`)
      })
      const client = clientFor(server)
      const weather: OpenAI.ChatCompletionMessageParam = { role: "tool", tool_call_id: "call_w", content: "sunny" }
      const time: OpenAI.ChatCompletionMessageParam = { role: "tool", tool_call_id: "call_t", content: "09:00" }

      for (const results of [[weather, time], [time, weather]]) {
        const completion = yield* Effect.promise(() =>
          client.chat.completions.create({
            model: MODEL,
            messages: [ask, twoCalls, ...results, { role: "assistant", content: "Sunny, 9am." }, {
              role: "user",
              content: "Thanks"
            }],
            tools: [weatherTool, timeTool]
          })
        )
        expect(completion.choices[0]?.message.content).toBe("6 messages")
      }
      expect(server.rejected).toEqual([])
    }))

  it.scoped("rejects a tool call naming a tool the request does not offer", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi()

      const error = yield* rejection(server, [
        ask,
        { role: "assistant", content: null, tool_calls: [callOf("call_s", "search", "{}")] },
        { role: "tool", tool_call_id: "call_s", content: "nothing" }
      ])

      expect(error.error).toMatchObject({ param: "messages[1].tool_calls[0].function.name" })
      expect(error.message).toContain("is 'search', which is not the name of a function in 'tools'")
    }))

  it.scoped("rejected requests do not consume the script", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi({ replies: [StrictOpenAi.text("first")] })

      yield* rejection(server, [ask, twoCalls])
      const completion = yield* Effect.promise(() =>
        clientFor(server).chat.completions.create({ model: MODEL, messages: [ask] })
      )

      expect(completion.choices[0]?.message.content).toBe("first")
      expect(server.requests).toHaveLength(2)
      expect(server.rejected).toHaveLength(1)
    }))
})

describe("validateChatRequest", () => {
  const valid = { model: MODEL, messages: [{ role: "user", content: "hi" }] }
  const withMessages = (...messages: ReadonlyArray<unknown>) => ({ model: MODEL, messages })
  const toolCall = (id: string, name = "get_weather") => ({
    id,
    type: "function",
    function: { name, arguments: "{}" }
  })

  it("accepts a minimal request, content parts, and an assistant message with content and calls", () => {
    expect(StrictOpenAi.validateChatRequest(valid)).toBeUndefined()
    expect(StrictOpenAi.validateChatRequest(withMessages(
      { role: "developer", content: "Be brief." },
      { role: "system", content: [{ type: "text", text: "Be kind." }] },
      { role: "user", content: [{ type: "text", text: "Look:" }, { type: "image_url", image_url: { url: "x" } }] },
      { role: "assistant", content: "Checking.", tool_calls: [toolCall("a")] },
      { role: "tool", tool_call_id: "a", content: [{ type: "text", text: "sunny" }] },
      { role: "assistant", content: "" }
    ))).toBeUndefined()
  })

  it("requires a model", () => {
    expect(StrictOpenAi.validateChatRequest({ messages: valid.messages })).toBe("you must provide a model parameter")
    expect(StrictOpenAi.validateChatRequest({ model: "", messages: valid.messages })).toBe(
      "you must provide a model parameter"
    )
  })

  it("requires a non-empty messages array", () => {
    expect(StrictOpenAi.validateChatRequest({ model: MODEL })).toBe("Missing required parameter: 'messages'.")
    expect(StrictOpenAi.validateChatRequest(withMessages())).toBe(
      "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead."
    )
    expect(StrictOpenAi.validateChatRequest({ model: MODEL, messages: "hi" })).toBe(
      "Invalid type for 'messages': expected an array of objects, but got a string instead."
    )
  })

  it("limits roles to system, developer, user, assistant and tool", () => {
    expect(StrictOpenAi.validateChatRequest(withMessages({ role: "bot", content: "hi" }))).toBe(
      "Invalid value: 'bot'. Supported values are: 'system', 'assistant', 'user', 'tool', and 'developer'."
    )
    expect(StrictOpenAi.validateChatRequest(withMessages({ content: "hi" }))).toBe(
      "Missing required parameter: 'messages[0].role'."
    )
  })

  it("requires content on user messages", () => {
    expect(StrictOpenAi.validateChatRequest(withMessages({ role: "user" }))).toBe(
      "Missing required parameter: 'messages[0].content'."
    )
    expect(StrictOpenAi.validateChatRequest(withMessages({ role: "user", content: null }))).toBe(
      "Invalid type for 'messages[0].content': expected one of a string or array of objects, but got null instead."
    )
    expect(StrictOpenAi.validateChatRequest(withMessages({ role: "user", content: [] }))).toBe(
      "Invalid 'messages[0].content': empty array. Expected an array with minimum length 1, but got an empty array instead."
    )
    expect(StrictOpenAi.validateChatRequest(withMessages({ role: "user", content: [{ type: "refusal" }] }))).toBe(
      "Invalid value: 'refusal'. Supported values are: 'text', 'image_url', 'input_audio', and 'file'."
    )
  })

  it("lets assistant content be null only next to tool calls", () => {
    const ask = { role: "user", content: "hi" }
    const nullContent = "Invalid value for 'content': expected a string, got null."
    expect(StrictOpenAi.validateChatRequest(withMessages(ask, { role: "assistant", content: null }))).toBe(nullContent)
    expect(StrictOpenAi.validateChatRequest(withMessages(ask, { role: "assistant" }))).toBe(nullContent)
    expect(StrictOpenAi.validateChatRequest(withMessages(ask, { role: "assistant", content: null, tool_calls: [] })))
      .toBe(
        "Invalid 'messages[1].tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead."
      )
    expect(StrictOpenAi.validateChatRequest(withMessages(
      ask,
      { role: "assistant", tool_calls: [toolCall("a")] },
      { role: "tool", tool_call_id: "a", content: "ok" }
    ))).toBeUndefined()
  })

  it("requires a tool_call_id and string (or text) content on tool messages", () => {
    const calls = [{ role: "user", content: "hi" }, { role: "assistant", content: null, tool_calls: [toolCall("a")] }]
    expect(StrictOpenAi.validateChatRequest(withMessages(...calls, { role: "tool", content: "ok" }))).toBe(
      "Missing required parameter: 'messages[2].tool_call_id'."
    )
    expect(StrictOpenAi.validateChatRequest(withMessages(...calls, { role: "tool", tool_call_id: "a" }))).toBe(
      "Missing required parameter: 'messages[2].content'."
    )
    expect(StrictOpenAi.validateChatRequest(withMessages(...calls, { role: "tool", tool_call_id: "a", content: 42 })))
      .toBe(
        "Invalid type for 'messages[2].content': expected one of a string or array of objects, but got an integer instead."
      )
  })

  it("requires tool call arguments as a JSON string, and distinct call ids", () => {
    const ask = { role: "user", content: "hi" }
    expect(StrictOpenAi.validateChatRequest(withMessages(ask, {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "a", type: "function", function: { name: "f", arguments: { city: "Paris" } } }]
    }))).toBe(
      "Invalid type for 'messages[1].tool_calls[0].function.arguments': expected a string, but got an object instead."
    )
    expect(StrictOpenAi.validateChatRequest(withMessages(ask, {
      role: "assistant",
      content: null,
      tool_calls: [toolCall("a"), toolCall("a")]
    }))).toBe("Invalid 'messages[1].tool_calls': duplicate tool call id 'a'.")
  })

  it("requires object schemas and OpenAI-safe names for tools", () => {
    const withTool = (fn: Record<string, unknown>) => ({ ...valid, tools: [{ type: "function", function: fn }] })
    expect(StrictOpenAi.validateChatRequest(withTool({ name: "f", parameters: { type: "object", properties: {} } })))
      .toBeUndefined()
    expect(StrictOpenAi.validateChatRequest(withTool({ name: "f" }))).toBeUndefined()
    expect(StrictOpenAi.validateChatRequest(withTool({ name: "f", parameters: { type: "string" } }))).toBe(
      "Invalid schema for function 'f': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"string\"'."
    )
    expect(StrictOpenAi.validateChatRequest(withTool({ name: "f", parameters: { properties: {} } }))).toBe(
      "Invalid schema for function 'f': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"None\"'."
    )
    expect(StrictOpenAi.validateChatRequest(withTool({ name: "files.read", parameters: { type: "object" } }))).toBe(
      "Invalid 'tools[0].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
    )
    expect(StrictOpenAi.validateChatRequest({ ...valid, tools: [] })).toBe(
      "Invalid 'tools': empty array. Expected an array with minimum length 1, but got an empty array instead."
    )
  })

  it("allows stream_options only when streaming", () => {
    expect(StrictOpenAi.validateChatRequest({ ...valid, stream_options: { include_usage: true } })).toBe(
      "The 'stream_options' parameter is only allowed when 'stream' is enabled."
    )
  })
})

// ---------------------------------------------------------------------------------------------
// The adapter against the strict server
// ---------------------------------------------------------------------------------------------

describe("OpenAI adapter against the strict fake", () => {
  const modelFor = (server: StrictOpenAi.StrictOpenAi) =>
    OpenAiModel.make({ model: MODEL, apiKey: "test", baseURL: server.url })

  const collect = <E>(stream: Stream.Stream<ModelChunk, E>) =>
    Stream.runCollect(stream).pipe(Effect.map(Chunk.toReadonlyArray))

  const request: ModelRequest = {
    system: "You are a weather assistant.",
    messages: [{ _tag: "user", content: "Weather in Paris?" }],
    tools: [{
      name: "get_weather",
      description: "Current weather for a city",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
    }]
  }

  it.scoped("streams a text reply as deltas and usage", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi({
        replies: [StrictOpenAi.text("It is sunny in Paris.", { promptTokens: 30, completionTokens: 6 })]
      })

      const chunks = yield* collect(modelFor(server).stream(request))

      const deltas = chunks.flatMap((c) => c._tag === "TextDelta" ? [c.text] : [])
      expect(deltas.length).toBeGreaterThan(1)
      expect(deltas.join("")).toBe("It is sunny in Paris.")
      expect(chunks[chunks.length - 1]).toEqual({ _tag: "Usage", inputTokens: 30, outputTokens: 6 })
      expect(server.rejected).toEqual([])
    }))

  it.scoped("assembles a tool call, and its transcript with the result is accepted on the next turn", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi({
        replies: [
          StrictOpenAi.toolCalls({ id: "call_paris", name: "get_weather", arguments: "{\"city\": \"Paris\"}" }),
          (turn) => {
            const result = turn.messages.find((m) => m.role === "tool")
            return StrictOpenAi.text(`The weather: ${result?.content}`)
          }
        ]
      })
      const model = modelFor(server)

      const first = yield* collect(model.stream(request))
      const call = ToolCall.make({ id: "call_paris", name: "get_weather", arguments: "{\"city\": \"Paris\"}" })
      expect(first.filter((c) => c._tag === "ToolCall")).toEqual([{ _tag: "ToolCall", call }])
      expect(first.some((c) => c._tag === "Usage")).toBe(true)

      const second = yield* collect(model.stream({
        ...request,
        messages: [
          ...request.messages,
          { _tag: "assistant", content: "", toolCalls: [call] },
          { _tag: "tool", toolCallId: "call_paris", name: "get_weather", content: "sunny, 24°C" }
        ]
      }))
      expect(second.flatMap((c) => c._tag === "TextDelta" ? [c.text] : []).join("")).toBe("The weather: sunny, 24°C")
      expect(server.rejected).toEqual([])
    }))

  it.scoped("sends the images tools showed in one user message after the tool results, numbered for a call that showed several, which the server accepts", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi({ replies: [StrictOpenAi.text("A red square.")] })
      const look = ToolCall.make({ id: "call_look", name: "view_image", arguments: "{\"path\":\"/out/a.png\"}" })
      const weather = ToolCall.make({ id: "call_weather", name: "get_weather", arguments: "{\"city\":\"Paris\"}" })
      const shots = ToolCall.make({ id: "call_shots", name: "browser__screenshots", arguments: "{}" })
      const chunks = yield* collect(modelFor(server).stream({
        ...request,
        tools: [
          ...request.tools,
          { name: "view_image", description: "Look at an image", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } },
          { name: "browser__screenshots", description: "Screenshots of the open tabs", parameters: { type: "object", properties: {} } }
        ],
        messages: [
          ...request.messages,
          { _tag: "assistant", content: "", toolCalls: [look, weather, shots] },
          { _tag: "tool", toolCallId: "call_look", name: "view_image", content: "showing /out/a.png", images: [{ mediaType: "image/png", data: "iVBORw0KGgo=" }] },
          { _tag: "tool", toolCallId: "call_weather", name: "get_weather", content: "sunny" },
          {
            _tag: "tool",
            toolCallId: "call_shots",
            name: "browser__screenshots",
            content: "[image 1: image/png, 8 bytes, shown]\n[image 2: image/jpeg, 3 bytes, shown]",
            images: [{ mediaType: "image/png", data: "iVBORw0KGgo=" }, { mediaType: "image/jpeg", data: "/9j/" }]
          }
        ]
      }))
      expect(chunks.flatMap((c) => c._tag === "TextDelta" ? [c.text] : []).join("")).toBe("A red square.")
      expect(server.rejected).toEqual([])
      const body = server.requests[0]
      const messages = typeof body === "object" && body !== null && "messages" in body && Array.isArray(body.messages) ? body.messages : []
      expect(messages.map((m: { role: string }) => m.role)).toEqual(["system", "user", "assistant", "tool", "tool", "tool", "user"])
      expect(messages[6]).toEqual({
        role: "user",
        content: [
          { type: "text", text: "The image shown by tool call call_look:" },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
          { type: "text", text: "Image 1 of 2 shown by tool call call_shots:" },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
          { type: "text", text: "Image 2 of 2 shown by tool call call_shots:" },
          { type: "image_url", image_url: { url: "data:image/jpeg;base64,/9j/" } }
        ]
      })
    }))

  it.scoped("sends tool call arguments that are no JSON object (a model cut off mid-call) as {}, which a server that parses them accepts", () =>
    Effect.gen(function*() {
      const parsesAsObject = (text: string) => {
        try {
          const value: unknown = JSON.parse(text)
          return typeof value === "object" && value !== null && !Array.isArray(value)
        } catch {
          return false
        }
      }
      const sent: Array<string> = []
      // As vLLM and llama-server do: every tool call in the history is parsed, and one that does
      // not parse fails the whole request, on every later turn of the conversation.
      const server = yield* StrictOpenAi.strictOpenAi({
        otherwise: (turn) => {
          const calls = turn.messages.flatMap((m) => m.role === "assistant" ? m.toolCalls : [])
          sent.push(...calls.map((call) => call.arguments))
          const broken = calls.find((call) => !parsesAsObject(call.arguments))
          return broken === undefined
            ? StrictOpenAi.text("Paris is cut off, Rome is sunny.")
            : StrictOpenAi.badRequest(`Invalid JSON in the arguments of tool call '${broken.id}'.`)
        }
      })
      const cut = ToolCall.make({ id: "call_cut", name: "get_weather", arguments: "{\"city\": \"Par" })
      const scalar = ToolCall.make({ id: "call_scalar", name: "get_weather", arguments: "\"Oslo\"" })
      const spaced = ToolCall.make({ id: "call_spaced", name: "get_weather", arguments: "{ \"city\" : \"Rome\" }" })

      const chunks = yield* collect(modelFor(server).stream({
        ...request,
        messages: [
          ...request.messages,
          { _tag: "assistant", content: "", toolCalls: [cut, scalar, spaced] },
          { _tag: "tool", toolCallId: "call_cut", name: "get_weather", content: "the arguments are not valid JSON" },
          { _tag: "tool", toolCallId: "call_scalar", name: "get_weather", content: "the arguments are not an object" },
          { _tag: "tool", toolCallId: "call_spaced", name: "get_weather", content: "sunny" }
        ]
      }))

      expect(chunks.flatMap((c) => c._tag === "TextDelta" ? [c.text] : []).join("")).toBe("Paris is cut off, Rome is sunny.")
      expect(sent).toEqual(["{}", "{}", "{\"city\":\"Rome\"}"])
      expect(server.rejected).toEqual([])
    }))

  it.scoped("surfaces the server's 400 as a permanent ModelError carrying its message", () =>
    Effect.gen(function*() {
      const server = yield* StrictOpenAi.strictOpenAi({ replies: [StrictOpenAi.text("never sent")] })
      const call = ToolCall.make({ id: "call_lost", name: "get_weather", arguments: "{}" })

      const error = yield* Effect.flip(collect(modelFor(server).stream({
        ...request,
        messages: [
          ...request.messages,
          { _tag: "assistant", content: "", toolCalls: [call] },
          { _tag: "user", content: "Hello?" }
        ]
      })))

      expect(error._tag).toBe("ModelError")
      expect(error.kind).toBe("permanent")
      expect(error.status).toBe(400)
      expect(error.message).toBe(`OpenAI returned 400: ${missingResults}call_lost`)
    }))
})
