import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Stream } from "effect"
import { ModelResolver } from "../../src/models/Model.js"
import { ModelResolverLive } from "../../src/models/ModelResolverLive.js"

const resolverWith = (env: Record<string, string>) =>
  ModelResolver.pipe(
    Effect.provide(ModelResolverLive.pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))))
  )

describe("model resolution", () => {
  it.effect("without OPENAI_API_KEY, openai:* agents run on the demo model and the notice says so", () =>
    Effect.gen(function*() {
      const resolver = yield* resolverWith({})
      const resolved = resolver.resolve("openai:gpt-4.1-mini")
      expect(resolved.model.name).toBe("demo")
      expect(resolved.fallbackFrom).toBe("openai:gpt-4.1-mini")
      expect(resolver.notice).toContain("OPENAI_API_KEY is not set")
    }))

  it.effect("with OPENAI_API_KEY, openai:<model> is the OpenAI adapter for that model", () =>
    Effect.gen(function*() {
      const resolver = yield* resolverWith({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: "http://127.0.0.1:9/v1" })
      const resolved = resolver.resolve("openai:gpt-4.1-mini")
      expect(resolved.model.name).toBe("openai:gpt-4.1-mini")
      expect(resolved.fallbackFrom).toBeUndefined()
      expect(resolver.notice).toBeUndefined()
      expect(resolver.resolve("demo").model.name).toBe("demo")
    }))
})

describe("the demo model", () => {
  const tools = [
    {
      name: "lookup-order",
      description: "Look up an order's shipping status by its order id",
      parameters: { type: "object", properties: { orderId: { type: "string" } }, required: ["orderId"] }
    },
    {
      name: "current-time",
      description: "Tell the current date and time (UTC)",
      parameters: { type: "object", properties: {} }
    }
  ]

  it.effect("calls the tool that matches the message, with its input filled from the message", () =>
    Effect.gen(function*() {
      const resolver = yield* resolverWith({})
      const model = resolver.resolve("demo").model
      const chunks = yield* Stream.runCollect(model.stream({
        system: "",
        messages: [{ _tag: "user", content: "Where is my order #1001?" }],
        tools
      }))
      const calls = [...chunks].flatMap((c) => c._tag === "ToolCall" ? [c.call] : [])
      expect(calls).toHaveLength(1)
      expect(calls[0]?.name).toBe("lookup-order")
      expect(JSON.parse(calls[0]?.arguments ?? "{}")).toEqual({ orderId: "1001" })
    }))

  it.effect("answers with what the tool returned, and explains itself when no tool matches", () =>
    Effect.gen(function*() {
      const model = (yield* resolverWith({})).resolve("demo").model
      const text = (request: Parameters<typeof model.stream>[0]) =>
        Stream.runCollect(model.stream(request)).pipe(
          Effect.map((chunks) => [...chunks].map((c) => c._tag === "TextDelta" ? c.text : "").join(""))
        )
      const answer = yield* text({
        system: "",
        messages: [
          { _tag: "user", content: "Where is order 42?" },
          { _tag: "assistant", content: "", toolCalls: [{ id: "c1", name: "lookup-order", arguments: "{\"orderId\":\"42\"}" }] },
          { _tag: "tool", toolCallId: "c1", name: "lookup-order", content: "{\"status\":\"shipped\"}" }
        ],
        tools
      })
      expect(answer).toBe("lookup-order returned: {\"status\":\"shipped\"}")
      const fallback = yield* text({ system: "", messages: [{ _tag: "user", content: "Sing me a song" }], tools })
      expect(fallback).toContain("Sing me a song")
      expect(fallback).toContain("lookup-order")
    }))
})
