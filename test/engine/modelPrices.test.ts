/**
 * Model prices: the gpt-5 family, o1 and o3-mini are known, prompt-cached input is billed at the
 * cached rate, and a model without a price is warned of (once) when a cost budget is set. Through
 * the server, with every agent on the OpenAI adapter at the strict fake.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as OpenAiModel from "../../src/models/openai.js"
import { priceOf } from "../../src/models/prices.js"
import * as Scripted from "../../src/models/scripted.js"
import { logLines } from "../support/logLines.js"
import { http, startServer, waitForRun } from "../support/server.js"
import * as Fake from "../support/strictOpenAi.js"
import { tempProject } from "../support/tempProject.js"

/** A project with one agent `desk`, without tools, and a config. */
const project = (config: string) => ({
  "agents/desk/agent.ts": `import { defineAgent } from "foundry"\nexport default defineAgent({ description: "Help desk", model: "demo" })\n`,
  "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig(${config})\n`
})

interface EventView {
  readonly type: string
  readonly data: Record<string, unknown>
}

const runTo = (url: string, message: string) =>
  Effect.gen(function*() {
    const created = yield* http(`${url}/api/runs`, { body: { agent: "desk", message } })
    expect(created.status, created.text).toBe(202)
    const { runId } = created.json as { runId: string }
    const run = (yield* waitForRun(url, runId)) as unknown as { readonly status: string; readonly error?: string; readonly usage: { readonly costUsd: number; readonly unpricedTurns: number } }
    const events = (yield* http(`${url}/api/runs/${runId}/events`)).json as ReadonlyArray<EventView>
    return { run, events }
  })

/** Every answer "Done.", after 1000 prompt tokens (800 of them from the cache) and 100 completion tokens. */
const cachedAnswers = Fake.strictOpenAi({ otherwise: () => Fake.text("Done.", { promptTokens: 1000, completionTokens: 100, cachedTokens: 800 }) })

describe("model prices", () => {
  it("gpt-5, -mini, -nano, o1 and o3-mini (and their dated snapshots) have prices", () => {
    const names = ["openai:gpt-5", "openai:gpt-5-mini", "openai:gpt-5-nano", "openai:o1", "openai:o3-mini", "openai:gpt-5-2025-08-07"]
    expect(names.map((name) => priceOf(name, {}))).toEqual([
      { input: 1.25, cached: 0.125, output: 10 },
      { input: 0.25, cached: 0.025, output: 2 },
      { input: 0.05, cached: 0.005, output: 0.4 },
      { input: 15, cached: 7.5, output: 60 },
      { input: 1.1, cached: 0.55, output: 4.4 },
      { input: 1.25, cached: 0.125, output: 10 }
    ])
  })

  it.scopedLive("cached input tokens cost the model's cached rate; a configured price without one bills them as input", () =>
    Effect.gen(function*() {
      const provider = yield* cachedAnswers
      const model = OpenAiModel.make({ model: "gpt-4.1-mini", apiKey: "sk-test", baseURL: provider.url })
      const root = yield* tempProject(project(`{ prices: { "openai:gpt-4.1": { input: 2, output: 8 } } }`))
      const server = yield* startServer(root, { model })
      const { events, run } = yield* runTo(server.url, "hello")
      expect(run.status).toBe("completed")
      // 200 uncached at $0.40/M, 800 cached at $0.10/M, 100 out at $1.60/M.
      const usage = events.find((e) => e.type === "model.turn.completed")?.data.usage as { readonly costUsd: number }
      expect(usage.costUsd).toBeCloseTo((200 * 0.4 + 800 * 0.1 + 100 * 1.6) / 1_000_000, 12)

      const other = OpenAiModel.make({ model: "gpt-4.1", apiKey: "sk-test", baseURL: provider.url })
      const configured = yield* startServer(root, { model: other })
      const priced = yield* runTo(configured.url, "hello")
      const without = priced.events.find((e) => e.type === "model.turn.completed")?.data.usage as { readonly costUsd: number }
      expect(without.costUsd).toBeCloseTo((1000 * 2 + 100 * 8) / 1_000_000, 12)
    }))

  it.scopedLive("maxCostPerRun trips on gpt-5", () =>
    Effect.gen(function*() {
      const provider = yield* cachedAnswers
      const model = OpenAiModel.make({ model: "gpt-5", apiKey: "sk-test", baseURL: provider.url })
      const root = yield* tempProject(project(`{ budget: { maxCostPerRun: 0.000001 } }`))
      const server = yield* startServer(root, { model })
      const { events, run } = yield* runTo(server.url, "hello")
      // A final answer is kept, and the budget it went past is said.
      expect(run.usage.unpricedTurns).toBe(0)
      expect(run.usage.costUsd).toBeGreaterThan(0.000001)
      expect(events.filter((e) => e.type === "budget.exceeded").map((e) => e.data.budget)).toEqual(["maxCostPerRun"])
    }))

  it.scopedLive("a model without a price is warned of once, when a cost budget is set", () =>
    Effect.gen(function*() {
      const lines = yield* logLines
      const answer = Scripted.make(() => ({ text: "Done." }))
      const unpriced = (name: string) => ({ ...answer, name })
      const budgeted = yield* tempProject(project(`{ budget: { maxCostPerRun: 5 } }`))
      const server = yield* startServer(budgeted, { model: unpriced("openai:my-finetune") })
      yield* runTo(server.url, "one")
      yield* runTo(server.url, "two")
      const warnings = lines.filter((line) => line.includes("has no price"))
      expect(warnings).toEqual([
        "model openai:my-finetune has no price: its turns cost nothing in usage, so maxCostPerRun cannot count them; " +
          "give it one in foundry.config.ts prices, e.g. prices: { \"openai:my-finetune\": { input: 1.25, output: 10, cached: 0.125 } } (USD per million tokens)"
      ])
      // Without a cost budget, an unpriced model is no matter for a warning.
      const unbudgeted = yield* tempProject(project(`{ budget: { maxTokensPerRun: 100000 } }`))
      const other = yield* startServer(unbudgeted, { model: unpriced("openai:other-finetune") })
      yield* runTo(other.url, "three")
      expect(lines.filter((line) => line.includes("other-finetune"))).toEqual([])
    }))
})
