/**
 * The OpenAI adapter, run through the real `openai` SDK against a local server that speaks the
 * Chat Completions wire format (SSE chunks, a usage chunk, `[DONE]`, OpenAI-style error bodies).
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Deferred, Effect, Either, Exit, Fiber, Option, Stream } from "effect"
import { createServer, type IncomingHttpHeaders } from "node:http"
import { type ModelChunk, type ModelRequest, ToolCall } from "../../src/models/Model.js"
import * as OpenAiModel from "../../src/models/openai.js"
import { close, listen } from "../support/loopback.js"
import { until } from "../support/until.js"

// ---------------------------------------------------------------------------------------------
// A fake Chat Completions endpoint
// ---------------------------------------------------------------------------------------------

/** What the server answers to `POST /v1/chat/completions`. */
type Reply =
  | {
    readonly _tag: "Stream"
    readonly events: ReadonlyArray<unknown>
    /** Destroy the socket after the events instead of ending the stream with `[DONE]`. */
    readonly dropConnection?: boolean
  }
  | { readonly _tag: "Error"; readonly status: number; readonly body: unknown }

interface RecordedRequest {
  readonly method: string | undefined
  readonly url: string | undefined
  readonly headers: IncomingHttpHeaders
  readonly body: unknown
}

interface FakeOpenAi {
  readonly baseURL: string
  readonly requests: ReadonlyArray<RecordedRequest>
}


/** A local server answering every completion request with `reply`, closed with the scope. */
const fakeOpenAi = (reply: Reply) =>
  Effect.gen(function*() {
    const requests: Array<RecordedRequest> = []
    const server = yield* Effect.acquireRelease(
      Effect.sync(() =>
        createServer((req, res) => {
          let raw = ""
          req.setEncoding("utf8")
          req.on("data", (piece: string) => {
            raw += piece
          })
          req.on("end", () => {
            const body: unknown = raw.length > 0 ? JSON.parse(raw) : undefined
            requests.push({ method: req.method, url: req.url, headers: req.headers, body })
            if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
              res.writeHead(404, { "content-type": "application/json" })
              res.end(JSON.stringify({ error: { message: `No route ${req.method} ${req.url}` } }))
              return
            }
            if (reply._tag === "Error") {
              res.writeHead(reply.status, { "content-type": "application/json" })
              res.end(JSON.stringify(reply.body))
              return
            }
            res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
            for (const event of reply.events) res.write(`data: ${JSON.stringify(event)}\n\n`)
            if (reply.dropConnection === true) {
              setTimeout(() => res.destroy(), 20)
              return
            }
            res.end("data: [DONE]\n\n")
          })
        })
      ),
      close
    )
    const port = yield* Effect.orDie(listen(server))
    const fake: FakeOpenAi = { baseURL: `http://127.0.0.1:${port}/v1`, requests }
    return fake
  })

/** A server that stalls after its first events: the request stays open, fed only SSE comments. */
interface StallingOpenAi {
  readonly baseURL: string
  /** Whether the client closed the request (the server never ends it). */
  readonly closed: () => boolean
}

/**
 * A local server that answers with `events`, then only a `: ping` keep-alive comment every 50 ms,
 * as a proxy or an OpenAI-compatible server does while its model is stuck: the socket never goes
 * quiet, so only the client can end the request.
 */
const stallingOpenAi = (events: ReadonlyArray<unknown>) =>
  Effect.gen(function*() {
    let closed = false
    const timers = new Set<ReturnType<typeof setInterval>>()
    const server = yield* Effect.acquireRelease(
      Effect.sync(() =>
        createServer((req, res) => {
          req.resume()
          req.on("end", () => {
            res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
            for (const event of events) res.write(`data: ${JSON.stringify(event)}\n\n`)
            const ping = setInterval(() => res.write(": ping\n\n"), 50)
            timers.add(ping)
            res.on("close", () => {
              closed = true
              clearInterval(ping)
            })
          })
        })
      ),
      (server) => Effect.zipRight(Effect.sync(() => timers.forEach(clearInterval)), close(server))
    )
    const port = yield* Effect.orDie(listen(server))
    const fake: StallingOpenAi = { baseURL: `http://127.0.0.1:${port}/v1`, closed: () => closed }
    return fake
  })

const MODEL = "gpt-4.1-mini"

/** A `chat.completion.chunk` exactly as the API streams it. */
const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
  id: "chatcmpl-test",
  object: "chat.completion.chunk",
  created: 1_700_000_000,
  model: MODEL,
  system_fingerprint: "fp_test",
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }]
})

/** A chunk as some OpenAI-compatible servers stream it: no `finish_reason` at all until the last. */
const chunkWithoutFinish = (delta: Record<string, unknown>) => ({
  id: "chatcmpl-test",
  object: "chat.completion.chunk",
  created: 1_700_000_000,
  model: MODEL,
  choices: [{ index: 0, delta }]
})

/** The final chunk sent with `stream_options.include_usage`: no choices, just usage. */
const usageChunk = (promptTokens: number, completionTokens: number) => ({
  id: "chatcmpl-test",
  object: "chat.completion.chunk",
  created: 1_700_000_000,
  model: MODEL,
  system_fingerprint: "fp_test",
  choices: [],
  usage: {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens
  }
})

const openAiError = (message: string, type: string, code: string | null) => ({
  error: { message, type, param: null, code }
})

const modelFor = (fake: FakeOpenAi) =>
  OpenAiModel.make({ model: MODEL, apiKey: "test-key", baseURL: fake.baseURL })

const simpleRequest: ModelRequest = {
  system: "",
  messages: [{ _tag: "user", content: "Say hello" }],
  tools: []
}

const collect = <E>(stream: Stream.Stream<ModelChunk, E>) =>
  Stream.runCollect(stream).pipe(Effect.map(Chunk.toReadonlyArray))

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

describe("openai model", () => {
  it("is named after its model", () => {
    expect(OpenAiModel.make({ model: MODEL, apiKey: "test-key" }).name).toBe(`openai:${MODEL}`)
  })

  it.scoped("streams text as several deltas, then usage", () =>
    Effect.gen(function*() {
      const fake = yield* fakeOpenAi({
        _tag: "Stream",
        events: [
          chunk({ role: "assistant", content: "", refusal: null }),
          chunk({ content: "Hello" }),
          chunk({ content: ", wor" }),
          chunk({ content: "ld!" }),
          chunk({}, "stop"),
          usageChunk(12, 4)
        ]
      })

      const chunks = yield* collect(modelFor(fake).stream(simpleRequest))

      const deltas = chunks.flatMap((c) => c._tag === "TextDelta" ? [c.text] : [])
      expect(deltas).toEqual(["Hello", ", wor", "ld!"])
      expect(deltas.join("")).toBe("Hello, world!")
      expect(chunks.filter((c) => c._tag === "Usage")).toEqual([
        { _tag: "Usage", inputTokens: 12, outputTokens: 4 }
      ])
      expect(chunks.some((c) => c._tag === "ToolCall")).toBe(false)

      expect(fake.requests).toHaveLength(1)
      const [sent] = fake.requests
      expect(sent?.method).toBe("POST")
      expect(sent?.url).toBe("/v1/chat/completions")
      expect(sent?.headers.authorization).toBe("Bearer test-key")
      // No system message when the system prompt is empty, and no `tools` when there are none.
      expect(sent?.body).toEqual({
        model: MODEL,
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: "user", content: "Say hello" }]
      })
    }))

  it.scoped("assembles parallel tool calls streamed in fragments, and sends the transcript", () =>
    Effect.gen(function*() {
      const fake = yield* fakeOpenAi({
        _tag: "Stream",
        events: [
          chunk({ role: "assistant", content: null, refusal: null }),
          chunk({
            tool_calls: [{
              index: 0,
              id: "call_weather_paris",
              type: "function",
              function: { name: "get_weather", arguments: "" }
            }]
          }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: "{\"ci" } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: "ty\": \"Par" } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: "is\"}" } }] }),
          chunk({
            tool_calls: [{
              index: 1,
              id: "call_time_tokyo",
              type: "function",
              function: { name: "get_time", arguments: "" }
            }]
          }),
          chunk({ tool_calls: [{ index: 1, function: { arguments: "{\"zone\": " } }] }),
          chunk({ tool_calls: [{ index: 1, function: { arguments: "\"Asia/Tokyo\"}" } }] }),
          chunk({}, "tool_calls"),
          usageChunk(80, 45)
        ]
      })

      const request: ModelRequest = {
        system: "You are a travel assistant.",
        messages: [
          { _tag: "user", content: "What is the weather in Paris and the time in Tokyo?" },
          {
            _tag: "assistant",
            content: "",
            toolCalls: [ToolCall.make({ id: "call_prev", name: "lookup", arguments: "{\"q\":\"cities\"}" })]
          },
          { _tag: "tool", toolCallId: "call_prev", name: "lookup", content: "Paris, Tokyo" },
          { _tag: "assistant", content: "Checking both now.", toolCalls: [] }
        ],
        tools: [
          {
            name: "get_weather",
            description: "Current weather for a city",
            parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
          },
          {
            name: "get_time",
            description: "Current time in a time zone",
            parameters: { type: "object", properties: { zone: { type: "string" } }, required: ["zone"] }
          }
        ]
      }

      const chunks = yield* collect(modelFor(fake).stream(request))

      expect(chunks).toEqual([
        {
          _tag: "ToolCall",
          call: ToolCall.make({ id: "call_weather_paris", name: "get_weather", arguments: "{\"city\": \"Paris\"}" })
        },
        {
          _tag: "ToolCall",
          call: ToolCall.make({ id: "call_time_tokyo", name: "get_time", arguments: "{\"zone\": \"Asia/Tokyo\"}" })
        },
        { _tag: "Usage", inputTokens: 80, outputTokens: 45 }
      ])
      const parsed = chunks.flatMap((c) => c._tag === "ToolCall" ? [JSON.parse(c.call.arguments)] : [])
      expect(parsed).toEqual([{ city: "Paris" }, { zone: "Asia/Tokyo" }])

      const [sent] = fake.requests
      expect(sent?.headers.authorization).toBe("Bearer test-key")
      expect(sent?.body).toEqual({
        model: MODEL,
        stream: true,
        stream_options: { include_usage: true },
        messages: [
          { role: "system", content: "You are a travel assistant." },
          { role: "user", content: "What is the weather in Paris and the time in Tokyo?" },
          {
            role: "assistant",
            content: null,
            tool_calls: [{
              id: "call_prev",
              type: "function",
              function: { name: "lookup", arguments: "{\"q\":\"cities\"}" }
            }]
          },
          { role: "tool", tool_call_id: "call_prev", content: "Paris, Tokyo" },
          { role: "assistant", content: "Checking both now." }
        ],
        tools: [
          {
            type: "function",
            function: {
              name: "get_weather",
              description: "Current weather for a city",
              parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
            }
          },
          {
            type: "function",
            function: {
              name: "get_time",
              description: "Current time in a time zone",
              parameters: { type: "object", properties: { zone: { type: "string" } }, required: ["zone"] }
            }
          }
        ]
      })
    }))

  it.scoped("a stream that ends without a finish_reason was cut short: a transient failure, its tool calls not handed over", () =>
    Effect.gen(function*() {
      const fake = yield* fakeOpenAi({
        _tag: "Stream",
        events: [
          chunk({ content: "Let me look." }),
          chunk({
            tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "search", arguments: "{}" } }]
          })
        ]
      })

      const error = yield* Effect.flip(collect(modelFor(fake).stream(simpleRequest)))

      expect(error).toMatchObject({ kind: "transient", message: expect.stringMatching(/ended without a finish_reason/) })
    }))

  it.scoped("keeps parallel tool calls apart when a server streams them all under index 0 (Ollama)", () =>
    Effect.gen(function*() {
      const fake = yield* fakeOpenAi({
        _tag: "Stream",
        events: [
          chunk({
            role: "assistant",
            content: "",
            tool_calls: [{ index: 0, id: "call_paris", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Paris\"}" } }]
          }),
          chunk({
            tool_calls: [{ index: 0, id: "call_tokyo", type: "function", function: { name: "get_time", arguments: "{\"zone\":" } }]
          }),
          // A later fragment of the second call: same index, same id.
          chunk({ tool_calls: [{ index: 0, id: "call_tokyo", function: { arguments: "\"Asia/Tokyo\"}" } }] }),
          chunk({}, "tool_calls")
        ]
      })

      const chunks = yield* collect(modelFor(fake).stream(simpleRequest))

      expect(chunks).toEqual([
        { _tag: "ToolCall", call: ToolCall.make({ id: "call_paris", name: "get_weather", arguments: "{\"city\":\"Paris\"}" }) },
        { _tag: "ToolCall", call: ToolCall.make({ id: "call_tokyo", name: "get_time", arguments: "{\"zone\":\"Asia/Tokyo\"}" }) }
      ])
    }))

  it.scoped("assembles tool calls streamed without an index by their ids", () =>
    Effect.gen(function*() {
      const fake = yield* fakeOpenAi({
        _tag: "Stream",
        events: [
          chunk({ tool_calls: [{ id: "call_paris", type: "function", function: { name: "get_weather", arguments: "{\"ci" } }] }),
          chunk({ tool_calls: [{ function: { arguments: "ty\":\"Paris\"}" } }] }),
          chunk({ tool_calls: [{ id: "call_tokyo", type: "function", function: { name: "get_time", arguments: "" } }] }),
          chunk({ tool_calls: [{ id: "call_tokyo", function: { arguments: "{\"zone\":\"Asia/Tokyo\"}" } }] }),
          chunk({}, "tool_calls")
        ]
      })

      const chunks = yield* collect(modelFor(fake).stream(simpleRequest))

      expect(chunks).toEqual([
        { _tag: "ToolCall", call: ToolCall.make({ id: "call_paris", name: "get_weather", arguments: "{\"city\":\"Paris\"}" }) },
        { _tag: "ToolCall", call: ToolCall.make({ id: "call_tokyo", name: "get_time", arguments: "{\"zone\":\"Asia/Tokyo\"}" }) }
      ])
    }))

  it.scoped("a chunk that leaves out finish_reason does not end the tool calls in it", () =>
    Effect.gen(function*() {
      const fake = yield* fakeOpenAi({
        _tag: "Stream",
        events: [
          chunkWithoutFinish({
            role: "assistant",
            tool_calls: [{ index: 0, id: "call_paris", type: "function", function: { name: "get_weather", arguments: "" } }]
          }),
          chunkWithoutFinish({ tool_calls: [{ index: 0, function: { arguments: "{\"city\":" } }] }),
          chunkWithoutFinish({ tool_calls: [{ index: 0, function: { arguments: "\"Paris\"}" } }] }),
          chunk({}, "tool_calls")
        ]
      })

      const chunks = yield* collect(modelFor(fake).stream(simpleRequest))

      expect(chunks).toEqual([
        { _tag: "ToolCall", call: ToolCall.make({ id: "call_paris", name: "get_weather", arguments: "{\"city\":\"Paris\"}" }) }
      ])
    }))

  it.scoped("a text answer cut off at the model's output limit (finish_reason length) fails as permanent, saying so", () =>
    Effect.gen(function*() {
      const fake = yield* fakeOpenAi({
        _tag: "Stream",
        events: [
          chunk({ role: "assistant", content: "" }),
          chunk({ content: "The three reasons are: first, the" }),
          chunk({ content: " cost; second," }, "length"),
          usageChunk(40, 4096)
        ]
      })

      const result = yield* Effect.either(collect(modelFor(fake).stream(simpleRequest)))

      expect(Either.isLeft(result)).toBe(true)
      const error = Either.getLeft(result)
      expect(Option.map(error, (e) => e.kind)).toEqual(Option.some("permanent"))
      expect(Option.map(error, (e) => e.message)).toEqual(Option.some(expect.stringContaining("cut off at the model's output limit")))
    }))

  it.scoped("tool calls that end with finish_reason length are still handed over", () =>
    Effect.gen(function*() {
      const fake = yield* fakeOpenAi({
        _tag: "Stream",
        events: [
          chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "search", arguments: "{\"q\":\"lo" } }] }),
          chunk({}, "length")
        ]
      })

      const chunks = yield* collect(modelFor(fake).stream(simpleRequest))

      expect(chunks).toEqual([
        { _tag: "ToolCall", call: ToolCall.make({ id: "call_1", name: "search", arguments: "{\"q\":\"lo" }) }
      ])
    }))

  it.scoped("an answer the provider's content filter stopped before any text fails as permanent, saying so", () =>
    Effect.gen(function*() {
      const fake = yield* fakeOpenAi({
        _tag: "Stream",
        events: [chunk({ role: "assistant", content: "" }), chunk({}, "content_filter"), usageChunk(40, 0)]
      })

      const result = yield* Effect.either(collect(modelFor(fake).stream(simpleRequest)))

      const error = Either.getLeft(result)
      expect(Option.map(error, (e) => e.kind)).toEqual(Option.some("permanent"))
      expect(Option.map(error, (e) => e.message)).toEqual(Option.some(expect.stringContaining("content filter")))
    }))

  it.scoped("429 is a transient ModelError with a readable message", () =>
    Effect.gen(function*() {
      const fake = yield* fakeOpenAi({
        _tag: "Error",
        status: 429,
        body: { error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" } }
      })

      const error = yield* Effect.flip(collect(modelFor(fake).stream(simpleRequest)))

      expect(error._tag).toBe("ModelError")
      expect(error.kind).toBe("transient")
      expect(error.status).toBe(429)
      expect(error.model).toBe(`openai:${MODEL}`)
      expect(error.message).toBe("OpenAI returned 429: Rate limit reached")
      // One request only: the SDK must not retry on its own.
      expect(fake.requests).toHaveLength(1)
      expect(fake.requests[0]?.headers.authorization).toBe("Bearer test-key")
    }))

  it.scoped("400 is a permanent ModelError carrying the server's message", () =>
    Effect.gen(function*() {
      const fake = yield* fakeOpenAi({
        _tag: "Error",
        status: 400,
        body: openAiError("Invalid schema for function 'get_weather'.", "invalid_request_error", null)
      })

      const error = yield* Effect.flip(collect(modelFor(fake).stream(simpleRequest)))

      expect(error.kind).toBe("permanent")
      expect(error.status).toBe(400)
      expect(error.message).toContain("Invalid schema for function 'get_weather'.")
      expect(error.message).not.toContain("\n    at ")
    }))

  it.scoped("401 is permanent", () =>
    Effect.gen(function*() {
      const fake = yield* fakeOpenAi({
        _tag: "Error",
        status: 401,
        body: openAiError("Incorrect API key provided: test-key.", "invalid_request_error", "invalid_api_key")
      })

      const error = yield* Effect.flip(collect(modelFor(fake).stream(simpleRequest)))

      expect(error.kind).toBe("permanent")
      expect(error.status).toBe(401)
      expect(error.message).toBe("OpenAI returned 401: Incorrect API key provided: test-key.")
    }))

  it.scoped("500 is transient, and the SDK does not retry it", () =>
    Effect.gen(function*() {
      const fake = yield* fakeOpenAi({
        _tag: "Error",
        status: 500,
        body: openAiError("The server had an error while processing your request.", "server_error", null)
      })

      const error = yield* Effect.flip(collect(modelFor(fake).stream(simpleRequest)))

      expect(error.kind).toBe("transient")
      expect(error.status).toBe(500)
      expect(error.message).toBe("OpenAI returned 500: The server had an error while processing your request.")
      expect(fake.requests).toHaveLength(1)
    }))

  it.scoped("an error event in the middle of the stream fails the stream with a ModelError", () =>
    Effect.gen(function*() {
      const fake = yield* fakeOpenAi({
        _tag: "Stream",
        events: [
          chunk({ role: "assistant", content: "" }),
          chunk({ content: "Partial" }),
          openAiError("Something went wrong mid-stream.", "invalid_request_error", null)
        ]
      })

      const seen: Array<ModelChunk> = []
      const error = yield* modelFor(fake).stream(simpleRequest).pipe(
        Stream.runForEach((c) => Effect.sync(() => seen.push(c))),
        Effect.flip
      )

      expect(seen).toEqual([{ _tag: "TextDelta", text: "Partial" }])
      expect(error._tag).toBe("ModelError")
      expect(error.kind).toBe("permanent")
      expect(error.message).toContain("Something went wrong mid-stream.")
    }))

  it.scoped("an error event in the middle of the stream is transient when its type or code (a name, or a status) says the server failed, was overloaded or limited the rate", () =>
    Effect.gen(function*() {
      const kindOf = (error: unknown) =>
        Effect.gen(function*() {
          const fake = yield* fakeOpenAi({
            _tag: "Stream",
            events: [chunk({ role: "assistant", content: "" }), chunk({ content: "Partial" }), { error }]
          })
          const result = yield* Effect.either(collect(modelFor(fake).stream(simpleRequest)))
          return Either.isLeft(result) ? result.left.kind : "succeeded"
        })

      const kinds = yield* Effect.all({
        server: kindOf({ message: "The server had an error.", type: "server_error", param: null, code: null }),
        rateCode: kindOf({ message: "Rate limit reached.", type: "requests", param: null, code: "rate_limit_exceeded" }),
        rateType: kindOf({ message: "Rate limited.", type: "rate_limit_error" }),
        overloadedType: kindOf({ message: "Overloaded.", type: "overloaded_error" }),
        overloadedCode: kindOf({ message: "Overloaded.", type: "error", code: "overloaded" }),
        timeout: kindOf({ message: "Timed out.", type: "timeout", code: null }),
        invalid: kindOf({ message: "Bad request.", type: "invalid_request_error", param: null, code: null }),
        untyped: kindOf({ message: "Something else." }),
        // vLLM's: the status it would have answered with, as a number.
        statusCode: kindOf({ message: "Internal error.", type: "InternalServerError", param: null, code: 500 }),
        clientCode: kindOf({ message: "Bad request.", type: "BadRequestError", param: null, code: 400 })
      })

      expect(kinds).toEqual({
        server: "transient",
        rateCode: "transient",
        rateType: "transient",
        overloadedType: "transient",
        overloadedCode: "transient",
        timeout: "transient",
        invalid: "permanent",
        untyped: "permanent",
        statusCode: "transient",
        clientCode: "permanent"
      })
    }))

  it.scoped("a connection dropped in the middle of the stream is transient", () =>
    Effect.gen(function*() {
      const fake = yield* fakeOpenAi({
        _tag: "Stream",
        events: [chunk({ role: "assistant", content: "" }), chunk({ content: "Partial" })],
        dropConnection: true
      })

      const error = yield* Effect.flip(collect(modelFor(fake).stream(simpleRequest)))

      expect(error._tag).toBe("ModelError")
      expect(error.kind).toBe("transient")
      expect(error.status).toBeUndefined()
      expect(error.message).toMatch(/^OpenAI connection lost: /)
    }))

  it.effect("an unreachable server is a transient ModelError", () =>
    Effect.gen(function*() {
      // Grab a free port, then close it again so nothing listens there.
      const baseURL = yield* Effect.scoped(fakeOpenAi({ _tag: "Stream", events: [] })).pipe(
        Effect.map((fake) => fake.baseURL)
      )
      const model = OpenAiModel.make({ model: MODEL, apiKey: "test-key", baseURL })

      const error = yield* Effect.flip(collect(model.stream(simpleRequest)))

      expect(error.kind).toBe("transient")
      expect(error.status).toBeUndefined()
      expect(error.message).toMatch(/^OpenAI request failed: /)
    }))

  it.scopedLive("a stream that stalls on keep-alive comments stops at once when its fiber is interrupted, closing the request", () =>
    Effect.gen(function*() {
      const fake = yield* stallingOpenAi([chunk({ role: "assistant", content: "" }), chunk({ content: "Partial" })])
      const model = OpenAiModel.make({ model: MODEL, apiKey: "test-key", baseURL: fake.baseURL })
      const first = yield* Deferred.make<void>()
      const fiber = yield* model.stream(simpleRequest).pipe(
        Stream.runForEach(() => Deferred.succeed(first, undefined)),
        Effect.fork
      )
      yield* Deferred.await(first)

      yield* Fiber.interruptFork(fiber)
      // Before, the interruption waited behind the SDK's pending read, which the pings kept alive
      // for good: the fiber never ended.
      const exit = yield* Fiber.await(fiber).pipe(Effect.timeout("10 seconds"), Effect.option)

      expect(Option.map(exit, Exit.isInterrupted)).toEqual(Option.some(true))
      yield* until("the server sees the request closed", Effect.sync(fake.closed))
    }))

  it.scopedLive("a stream that stalls on keep-alive comments ends at an idle timeout around it, closing the request", () =>
    Effect.gen(function*() {
      const fake = yield* stallingOpenAi([chunk({ role: "assistant", content: "" }), chunk({ content: "Partial" })])
      const model = OpenAiModel.make({ model: MODEL, apiKey: "test-key", baseURL: fake.baseURL })

      // As the engine's model turn does (`modelRetry.idle`), with a short idle time.
      const fiber = yield* model.stream(simpleRequest).pipe(
        Stream.timeoutFail((): "idle" => "idle", "200 millis"),
        Stream.runCollect,
        Effect.fork
      )
      const result = yield* Fiber.join(fiber).pipe(Effect.either, Effect.timeout("10 seconds"), Effect.option)

      expect(Option.map(result, Either.getLeft)).toEqual(Option.some(Option.some("idle")))
      yield* until("the server sees the request closed", Effect.sync(fake.closed))
    }))
})
