/**
 * The OpenAI adapter against what real providers do that the happy path does not: a 429 asking
 * for a wait, an exhausted quota, compatible servers' odd streams and strict chat templates,
 * refusals, context errors by code. Through the real `openai` client and the strict fake.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { type ChatMessage, type ModelError } from "../../src/models/Model.js"
import * as OpenAiModel from "../../src/models/openai.js"
import { priceOf } from "../../src/models/prices.js"
import { isContextOverflow } from "../../src/engine/compaction.js"
import { modelTurn, type RetryPolicy } from "../../src/engine/modelTurn.js"
import * as Fake from "../support/strictOpenAi.js"

const quick: RetryPolicy = { times: 2, base: "1 millis", max: "1 millis", idle: "10 seconds" }

/** One model turn on `model` at the fake, and the failures its retries reported. */
const turn = (
  url: string,
  messages: ReadonlyArray<ChatMessage> = [{ _tag: "user", content: "hi" }],
  model = "gpt-4.1-mini",
  retry: RetryPolicy = quick
) =>
  Effect.gen(function*() {
    const retried: Array<ModelError> = []
    const result = yield* modelTurn(
      OpenAiModel.make({ model, apiKey: "sk-test", baseURL: url }),
      { system: "You help.", messages, tools: [] },
      { retry, onDeltas: () => Effect.void, onRetry: (error) => Effect.sync(() => retried.push(error)) }
    ).pipe(Effect.either)
    return { result, retried }
  })

const header = { id: "chatcmpl-x", object: "chat.completion.chunk", created: 1, model: "m" }
const chunk = (choice: Record<string, unknown>) => ({ ...header, choices: [{ index: 0, ...choice }] })

describe("openai adapter against real providers' behaviour", () => {
  it.scopedLive("a 429's retry-after-ms is waited for before the retry, and the retry says so", () =>
    Effect.gen(function*() {
      const provider = yield* Fake.strictOpenAi({
        replies: [Fake.rateLimited("gpt-4.1-mini", { "retry-after-ms": "400" }), Fake.text("Done.")]
      })
      const started = Date.now()
      const { result, retried } = yield* turn(provider.url)
      expect(Either.getOrThrow(result).text).toBe("Done.")
      expect(Date.now() - started).toBeGreaterThanOrEqual(400)
      expect(retried).toHaveLength(1)
      expect(retried[0]?.message).toMatch(/retried after 400ms, as the provider's retry-after asked/)
    }))

  it.scopedLive("a 429's retry-after in seconds is read too", () =>
    Effect.gen(function*() {
      const provider = yield* Fake.strictOpenAi({ replies: [Fake.rateLimited("gpt-4.1-mini", { "retry-after": "1" }), Fake.text("Done.")] })
      const started = Date.now()
      const { result } = yield* turn(provider.url)
      expect(Either.isRight(result)).toBe(true)
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000)
    }))

  it.scopedLive("a 429 for an exhausted quota fails at once: waiting will not pay the bill", () =>
    Effect.gen(function*() {
      const provider = yield* Fake.strictOpenAi({ replies: [Fake.insufficientQuota(), Fake.text("never")] })
      const { result, retried } = yield* turn(provider.url)
      const error = Either.getLeft(result)
      expect(error._tag).toBe("Some")
      expect(Either.isLeft(result) && result.left.kind).toBe("permanent")
      expect(Either.isLeft(result) && result.left.message).toMatch(/exceeded your current quota/)
      expect(retried).toHaveLength(0)
      expect(provider.requests).toHaveLength(1)
    }))

  it.scopedLive("a finish-only chunk without delta is read as no text", () =>
    Effect.gen(function*() {
      const provider = yield* Fake.strictOpenAi({
        replies: [Fake.chunks(
          chunk({ delta: { role: "assistant", content: "Hel" }, finish_reason: null }),
          chunk({ delta: { content: "lo." }, finish_reason: null }),
          chunk({ finish_reason: "stop" })
        )]
      })
      const { result } = yield* turn(provider.url)
      expect(Either.getOrThrow(result).text).toBe("Hello.")
    }))

  it.scopedLive("a stream that ends without a finish_reason was cut: asked again, not taken as the answer", () =>
    Effect.gen(function*() {
      const provider = yield* Fake.strictOpenAi({
        replies: [
          Fake.chunks(chunk({ delta: { role: "assistant", content: "The answer is" }, finish_reason: null })),
          Fake.text("The answer is 42.")
        ]
      })
      const { result, retried } = yield* turn(provider.url)
      expect(Either.getOrThrow(result).text).toBe("The answer is 42.")
      expect(retried.map((error) => error.message)).toEqual([expect.stringMatching(/ended without a finish_reason/)])
    }))

  it.scopedLive("a refusal is the answer's text, not an empty answer asked again", () =>
    Effect.gen(function*() {
      const provider = yield* Fake.strictOpenAi({
        replies: [Fake.chunks(
          chunk({ delta: { role: "assistant", content: null, refusal: "" }, finish_reason: null }),
          chunk({ delta: { refusal: "I'm sorry, I can't " }, finish_reason: null }),
          chunk({ delta: { refusal: "help with that." }, finish_reason: null }),
          chunk({ delta: {}, finish_reason: "stop" })
        )]
      })
      const { result, retried } = yield* turn(provider.url)
      expect(Either.getOrThrow(result).text).toBe("I'm sorry, I can't help with that.")
      expect(retried).toHaveLength(0)
    }))

  it("o1-mini, o1-preview and o3-mini take no images; o1, o3 and o4-mini do", () => {
    const sees = (model: string) => OpenAiModel.make({ model, apiKey: "sk-test" }).vision
    expect(["o1-mini", "o1-mini-2024-09-12", "o1-preview", "o3-mini", "o3-mini-2025-01-31"].map(sees)).toEqual([false, false, false, false, false])
    expect(["o1", "o1-2024-12-17", "o3", "o4-mini", "gpt-4o"].map(sees)).toEqual([true, true, true, true, true])
  })

  it.scopedLive("an image a tool showed is not sent to o3-mini", () =>
    Effect.gen(function*() {
      const provider = yield* Fake.strictOpenAi({ replies: [Fake.text("ok")] })
      const { result } = yield* turn(provider.url, [
        { _tag: "user", content: "look" },
        { _tag: "assistant", content: "", toolCalls: [{ id: "call_1", name: "view_image", arguments: "{}" }] },
        { _tag: "tool", toolCallId: "call_1", name: "view_image", content: "an image", images: [{ mediaType: "image/png", data: "AAAA" }] }
      ], "o3-mini")
      expect(Either.isRight(result)).toBe(true)
      expect(JSON.stringify(provider.requests[0])).not.toContain("image_url")
    }))

  it.scopedLive("two user messages in a row are sent as one, for servers whose templates want roles to alternate", () =>
    Effect.gen(function*() {
      const provider = yield* Fake.strictOpenAi({ replies: [Fake.text("ok")], alternatingRoles: true })
      const { result } = yield* turn(provider.url, [
        { _tag: "summary", content: "Summary: the user asked for a poem.", keepFrom: 3 },
        { _tag: "user", content: "first question" },
        { _tag: "user", content: "second question" }
      ])
      expect(provider.rejected).toEqual([])
      expect(Either.getOrThrow(result).text).toBe("ok")
      const sent = provider.requests[0]
      expect(sent).toMatchObject({
        messages: [
          { role: "system", content: "You help." },
          { role: "user", content: "Summary: the user asked for a poem.\n\nfirst question\n\nsecond question" }
        ]
      })
    }))

  it.scopedLive("a context error is known by its code, and by llama.cpp's wording and type", () =>
    Effect.gen(function*() {
      const provider = yield* Fake.strictOpenAi({
        replies: [
          Fake.error(400, "Input is too big for this model.", { code: "context_length_exceeded" }),
          Fake.error(400, "the request exceeds the available context size, try increasing it", { type: "exceed_context_size_error" }),
          Fake.error(400, "Something else went wrong.", { type: "exceed_context_size_error" })
        ]
      })
      const failures: Array<ModelError> = []
      for (let i = 0; i < 3; i++) {
        const { result } = yield* turn(provider.url)
        if (Either.isLeft(result)) failures.push(result.left)
      }
      expect(failures.map(isContextOverflow)).toEqual([true, true, true])
      expect(isContextOverflow({ status: 400, message: "OpenAI returned 400: Invalid 'messages[1].role'." })).toBe(false)
    }))
})

describe("prices", () => {
  it("a dated model name costs what its model does", () => {
    expect(priceOf("openai:gpt-4.1-2025-04-14", {})).toEqual(priceOf("openai:gpt-4.1", {}))
    expect(priceOf("openai:gpt-4o-mini-2024-07-18", {})).toEqual({ input: 0.15, cached: 0.075, output: 0.60 })
    expect(priceOf("openai:gpt-4.1-2025-04-14", { "openai:gpt-4.1": { input: 1, output: 2 } })).toEqual({ input: 1, output: 2 })
    expect(priceOf("openai:gpt-4.1-2025-04-14", { "openai:gpt-4.1-2025-04-14": { input: 3, output: 4 } })).toEqual({ input: 3, output: 4 })
    expect(priceOf("openai:unknown-2025-04-14", {})).toBeUndefined()
  })
})
