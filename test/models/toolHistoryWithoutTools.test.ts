/**
 * An agent left with no tools whose history holds tool calls: its request offers no `tools`, which
 * LiteLLM in front of Bedrock or Anthropic refuses for a history with tool calls. The calls and
 * their results go as text then. Through the real `openai` client and the strict fake (made to
 * refuse that case as LiteLLM does).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import type { ChatMessage, ToolSpec } from "../../src/models/Model.js"
import * as OpenAiModel from "../../src/models/openai.js"
import { modelTurn, type RetryPolicy } from "../../src/engine/modelTurn.js"
import * as Fake from "../support/strictOpenAi.js"

const quick: RetryPolicy = { times: 0, base: "1 millis", max: "1 millis", idle: "10 seconds" }

const history: ReadonlyArray<ChatMessage> = [
  { _tag: "user", content: "What is the weather in Oslo?" },
  { _tag: "assistant", content: "Let me look.", toolCalls: [{ id: "call_1", name: "weather", arguments: "{\"city\":\"Oslo\"}" }] },
  { _tag: "tool", toolCallId: "call_1", name: "weather", content: "4°C, rain" },
  { _tag: "assistant", content: "4°C and rain in Oslo.", toolCalls: [] },
  { _tag: "user", content: "And what did the tool say exactly?" }
]

const weather: ToolSpec = { name: "weather", description: "The weather in a city.", parameters: { type: "object", properties: { city: { type: "string" } } } }

const turn = (url: string, tools: ReadonlyArray<ToolSpec>) =>
  modelTurn(
    OpenAiModel.make({ model: "gpt-4.1-mini", apiKey: "sk-test", baseURL: url }),
    { system: "You help.", messages: history, tools },
    { retry: quick, onDeltas: () => Effect.void, onRetry: () => Effect.void }
  ).pipe(Effect.either)

describe("a history with tool calls and no tools offered", () => {
  it.scopedLive("is sent with its calls and results as text, which LiteLLM takes", () =>
    Effect.gen(function*() {
      const provider = yield* Fake.strictOpenAi({ toolsForToolCalls: true, alternatingRoles: true, replies: [Fake.text("It said 4°C, rain.")] })
      const result = yield* turn(provider.url, [])
      expect(provider.rejected.map((error) => error.message)).toEqual([])
      expect(Either.getOrThrow(result).text).toBe("It said 4°C, rain.")
      const sent = provider.requests[0] as { readonly messages: ReadonlyArray<{ readonly role: string; readonly content: unknown }>; readonly tools?: unknown }
      expect(sent.tools).toBeUndefined()
      expect(sent.messages).toEqual([
        { role: "system", content: "You help." },
        { role: "user", content: "What is the weather in Oslo?" },
        { role: "assistant", content: "Let me look.\n[called the tool weather (call call_1) with {\"city\":\"Oslo\"}]" },
        { role: "user", content: "[the result of the tool weather (call call_1); the tool is no longer offered]\n4°C, rain" },
        { role: "assistant", content: "4°C and rain in Oslo." },
        { role: "user", content: "And what did the tool say exactly?" }
      ])
    }))

  it.scopedLive("with its tools offered, the calls go as calls", () =>
    Effect.gen(function*() {
      const provider = yield* Fake.strictOpenAi({ toolsForToolCalls: true, replies: [Fake.text("It said 4°C, rain.")] })
      const result = yield* turn(provider.url, [weather])
      expect(Either.isRight(result)).toBe(true)
      const sent = provider.requests[0] as { readonly messages: ReadonlyArray<{ readonly role: string }> }
      expect(sent.messages.map((message) => message.role)).toEqual(["system", "user", "assistant", "tool", "assistant", "user"])
    }))
})
