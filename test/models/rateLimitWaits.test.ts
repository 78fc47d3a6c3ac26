/**
 * A 429's wait when no `retry-after` gives one: OpenAI's `x-ratelimit-reset-*` headers (for the
 * limit the 429 names), else the "Please try again in …" of its message. Through the real
 * `openai` client, the adapter and `modelTurn`, against the strict fake.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import type { ModelError } from "../../src/models/Model.js"
import * as OpenAiModel from "../../src/models/openai.js"
import { parseDuration } from "../../src/models/rateLimitWait.js"
import { modelTurn, type RetryPolicy } from "../../src/engine/modelTurn.js"
import * as Fake from "../support/strictOpenAi.js"

const quick: RetryPolicy = { times: 2, base: "1 millis", max: "1 millis", idle: "10 seconds" }

const turn = (url: string) =>
  Effect.gen(function*() {
    const retried: Array<ModelError> = []
    const started = Date.now()
    const result = yield* modelTurn(
      OpenAiModel.make({ model: "gpt-4.1-mini", apiKey: "sk-test", baseURL: url }),
      { system: "You help.", messages: [{ _tag: "user", content: "hi" }], tools: [] },
      { retry: quick, onDeltas: () => Effect.void, onRetry: (error) => Effect.sync(() => retried.push(error)) }
    ).pipe(Effect.either)
    return { result, retried, waited: Date.now() - started }
  })

/** OpenAI's 429 on a tokens-per-minute limit, saying when to try again in `wait`. */
const tokensLimited = (wait: string, headers?: Readonly<Record<string, string>>) =>
  Fake.error(
    429,
    "Rate limit reached for gpt-4.1-mini in organization org-test on tokens per min (TPM): Limit 30000, Used 29950, " +
      `Requested 120. Please try again in ${wait}. Visit https://platform.openai.com/account/rate-limits to learn more.`,
    { type: "tokens", code: "rate_limit_exceeded", ...(headers === undefined ? {} : { headers }) }
  )

describe("a 429's wait without retry-after", () => {
  it("OpenAI's durations are read as Go writes them", () => {
    expect(["1s", "6m0s", "20ms", "1.5s", "1h2m3s", "250ms"].map(parseDuration)).toEqual([1000, 360_000, 20, 1500, 3_723_000, 250])
    expect(["", "soon", "1x", "20 s"].map(parseDuration)).toEqual([undefined, undefined, undefined, undefined])
  })

  it.scopedLive("the reset header of the limit the 429 names is waited for, not the other one", () =>
    Effect.gen(function*() {
      const provider = yield* Fake.strictOpenAi({
        replies: [
          tokensLimited("20s", { "x-ratelimit-reset-tokens": "400ms", "x-ratelimit-reset-requests": "6m0s" }),
          Fake.text("Done.")
        ]
      })
      const { result, retried, waited } = yield* turn(provider.url)
      expect(Either.getOrThrow(result).text).toBe("Done.")
      expect(waited).toBeGreaterThanOrEqual(400)
      expect(waited).toBeLessThan(5000)
      expect(retried.map((error) => error.message)).toEqual([
        expect.stringMatching(/retried after 400ms, as the provider's x-ratelimit-reset-tokens asked\)$/)
      ])
    }))

  it.scopedLive("without any header, the message's \"Please try again in 250ms\" is waited for", () =>
    Effect.gen(function*() {
      const provider = yield* Fake.strictOpenAi({ replies: [tokensLimited("250ms"), tokensLimited("0.3s"), Fake.text("Done.")] })
      const { result, retried, waited } = yield* turn(provider.url)
      expect(Either.getOrThrow(result).text).toBe("Done.")
      expect(waited).toBeGreaterThanOrEqual(550)
      expect(retried.map((error) => error.retryAfter)).toEqual([250, 300])
      expect(retried[0]?.message).toMatch(/retried after 250ms, as the provider's error message asked\)$/)
    }))

  it.scopedLive("a wait longer than the retries left could wait (a daily limit's 6h) fails the turn at once, saying why", () =>
    Effect.gen(function*() {
      const provider = yield* Fake.strictOpenAi({
        replies: [
          Fake.error(429, "Rate limit reached for gpt-4.1-mini in organization org-test on requests per day (RPD): Limit 10000, Used 10000, Requested 1.", {
            type: "requests",
            code: "rate_limit_exceeded",
            headers: { "x-ratelimit-reset-requests": "6h0m0s" }
          }),
          Fake.text("Done.")
        ]
      })
      const { result, retried, waited } = yield* turn(provider.url)
      expect(Either.isLeft(result)).toBe(true)
      expect(Either.isLeft(result) ? result.left.message : "").toMatch(/not retried: the provider's x-ratelimit-reset-requests asked for 6h/)
      expect(retried).toEqual([])
      expect(waited).toBeLessThan(5000)
    }))

  it.scopedLive("a 500 is not made to wait for the reset headers OpenAI sends on every answer", () =>
    Effect.gen(function*() {
      const provider = yield* Fake.strictOpenAi({
        replies: [
          Fake.error(500, "The server had an error while processing your request. Sorry about that!", {
            type: "server_error",
            headers: { "x-ratelimit-reset-requests": "30s", "x-ratelimit-reset-tokens": "30s" }
          }),
          Fake.text("Done.")
        ]
      })
      const { result, retried, waited } = yield* turn(provider.url)
      expect(Either.getOrThrow(result).text).toBe("Done.")
      expect(waited).toBeLessThan(5000)
      expect(retried[0]?.retryAfter).toBeUndefined()
    }))
})
