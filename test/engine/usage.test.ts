import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import type { LanguageModel } from "../../src/models/Model.js"
import * as Scripted from "../../src/models/scripted.js"
import { costOf, priceOf } from "../../src/models/prices.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { tempProject, toolFile } from "../support/tempProject.js"

const agent = (description: string, budget = "") => `import { defineAgent } from "foundry"
import echo from "./tools/echo.tool.js"

export default defineAgent({
  description: ${JSON.stringify(description)},
  model: "demo",
  tools: [echo],
  maxTurns: 10${budget === "" ? "" : `,\n  budget: ${budget}`}
})
`

/** A project with agents `shop` and `desk` (each with an echo tool), and optionally a config. */
const project = (options: { readonly config?: string; readonly shopBudget?: string } = {}) => ({
  "agents/shop/agent.ts": agent("Shop assistant", options.shopBudget),
  "agents/shop/tools/echo.tool.ts": toolFile(),
  "agents/desk/agent.ts": agent("Help desk"),
  "agents/desk/tools/echo.tool.ts": toolFile(),
  ...(options.config === undefined
    ? {}
    : { "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig(${options.config})\n` })
})

/** The scripted model: a run whose message starts with "loop" calls echo on every turn; others call it once, then answer. */
const model = Scripted.make((request, index) => {
  const users = request.messages.filter((m) => m._tag === "user")
  const looping = users[users.length - 1]?.content.startsWith("loop") === true
  return looping || index === 0 ? { toolCalls: [{ name: "echo", arguments: { text: `call ${index}` } }] } : { text: "done" }
})

interface EventView {
  readonly type: string
  readonly agent: string
  readonly data: Record<string, unknown>
}

interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly costUsd: number
  readonly unpricedTurns: number
}

const runTo = (url: string, agentId: string, message: string, instance?: string) =>
  Effect.gen(function*() {
    const created = yield* http(`${url}/api/runs`, { body: { agent: agentId, message, ...(instance === undefined ? {} : { instance }) } })
    expect(created.status).toBe(202)
    const { runId } = created.json as { runId: string }
    const run = (yield* waitForRun(url, runId)) as unknown as Record<string, unknown> & { readonly usage: Usage }
    const events = (yield* http(`${url}/api/runs/${runId}/events`)).json as ReadonlyArray<EventView>
    return { run, events, runId }
  })

/** The usages of the `model.turn.completed` events, summed. */
const turnSums = (events: ReadonlyArray<EventView>) => {
  const turns = events.filter((e) => e.type === "model.turn.completed").map((e) => e.data.usage as Record<string, number | null>)
  return {
    inputTokens: turns.reduce((sum, u) => sum + (u.inputTokens ?? 0), 0),
    outputTokens: turns.reduce((sum, u) => sum + (u.outputTokens ?? 0), 0),
    costUsd: turns.reduce((sum, u) => sum + (u.costUsd ?? 0), 0),
    turns: turns.length
  }
}

interface UsageReport {
  readonly groupBy: string
  readonly rows: ReadonlyArray<Usage & { readonly runs: number; readonly day?: string; readonly agent?: string; readonly instanceId?: string }>
  readonly total: Usage & { readonly runs: number }
}

const usage = (url: string, query: string) =>
  Effect.map(http(`${url}/api/usage${query}`), (response) => {
    expect(response.status, response.text).toBe(200)
    return response.json as UsageReport
  })

describe("token and cost accounting", () => {
  it("prices come from the config first, then the defaults; a model with neither has none", () => {
    expect(priceOf("openai:gpt-4.1-mini", {})).toEqual({ input: 0.40, cached: 0.10, output: 1.60 })
    expect(priceOf("openai:gpt-4.1-mini", { "openai:gpt-4.1-mini": { input: 1, output: 2 } })).toEqual({ input: 1, output: 2 })
    expect(priceOf("demo", {})).toEqual({ input: 0, output: 0 })
    expect(priceOf("scripted:script", {})).toEqual({ input: 0, output: 0 })
    expect(priceOf("openai:my-model", {})).toBeUndefined()
    expect(costOf({ inputTokens: 1_000_000, outputTokens: 500_000 }, { input: 2, output: 8 })).toBe(6)
  })

  it.scopedLive("a run's usage on GET /api/runs/:id is the sum of its turns' usage, priced from the config's prices", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project({ config: `{ prices: { "scripted:script": { input: 2, output: 4 } } }` }))
      const server = yield* startServer(root, { model })
      const { events, run, runId } = yield* runTo(server.url, "shop", "echo something")
      expect(run.status).toBe("completed")
      const turns = turnSums(events)
      expect(turns).toMatchObject({ inputTokens: 20, outputTokens: 10, turns: 2 })
      // 10 input tokens at $2/M and 5 output tokens at $4/M per turn.
      expect(events.filter((e) => e.type === "model.turn.completed").map((e) => e.data.usage)).toEqual([
        { inputTokens: 10, outputTokens: 5, costUsd: 0.00004 },
        { inputTokens: 10, outputTokens: 5, costUsd: 0.00004 }
      ])
      expect(run.usage).toMatchObject({ inputTokens: turns.inputTokens, outputTokens: turns.outputTokens, unpricedTurns: 0 })
      expect(run.usage.costUsd).toBeCloseTo(turns.costUsd, 12)
      expect(run.usage.costUsd).toBeCloseTo(0.00008, 12)
      // Lists show the same totals.
      const listed = (yield* http(`${server.url}/api/runs?agent=shop`)).json as ReadonlyArray<{ readonly id: string; readonly usage: Usage }>
      expect(listed.find((r) => r.id === runId)?.usage).toEqual(run.usage)
    }))

  it.scopedLive("/api/usage grouped by day, agent and instance matches the sums of the runs' events", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project({ config: `{ prices: { "scripted:script": { input: 1, output: 1 } } }` }))
      const server = yield* startServer(root, { model })
      const runs = [
        yield* runTo(server.url, "shop", "echo a", "acme"),
        yield* runTo(server.url, "shop", "echo b", "globex"),
        yield* runTo(server.url, "desk", "echo c", "acme"),
        yield* runTo(server.url, "shop", "echo d", "acme")
      ]
      const byAgent = new Map<string, { inputTokens: number; outputTokens: number; costUsd: number; runs: number }>()
      for (const { events, run } of runs) {
        const sums = turnSums(events)
        const entry = byAgent.get(run.agent as string) ?? { inputTokens: 0, outputTokens: 0, costUsd: 0, runs: 0 }
        byAgent.set(run.agent as string, {
          inputTokens: entry.inputTokens + sums.inputTokens,
          outputTokens: entry.outputTokens + sums.outputTokens,
          costUsd: entry.costUsd + sums.costUsd,
          runs: entry.runs + 1
        })
      }
      const all = [...byAgent.values()].reduce((a, b) => ({
        inputTokens: a.inputTokens + b.inputTokens,
        outputTokens: a.outputTokens + b.outputTokens,
        costUsd: a.costUsd + b.costUsd,
        runs: a.runs + b.runs
      }))
      expect(all).toMatchObject({ inputTokens: 80, outputTokens: 40, runs: 4 })

      const daily = yield* usage(server.url, "?groupBy=day")
      const today = new Date().toISOString().slice(0, 10)
      expect(daily.groupBy).toBe("day")
      expect(daily.rows).toHaveLength(1)
      expect(daily.rows[0]).toMatchObject({ day: today, runs: 4, inputTokens: all.inputTokens, outputTokens: all.outputTokens, unpricedTurns: 0 })
      expect(daily.rows[0]?.costUsd).toBeCloseTo(all.costUsd, 12)
      expect(daily.total).toMatchObject({ runs: 4, inputTokens: all.inputTokens, outputTokens: all.outputTokens })
      // groupBy defaults to day.
      expect((yield* usage(server.url, "")).rows).toEqual(daily.rows)

      const agents = yield* usage(server.url, "?groupBy=agent")
      expect(agents.rows.map((row) => row.agent)).toEqual(["desk", "shop"])
      for (const row of agents.rows) {
        const expected = byAgent.get(row.agent ?? "")
        expect(row).toMatchObject({ runs: expected?.runs, inputTokens: expected?.inputTokens, outputTokens: expected?.outputTokens })
        expect(row.costUsd).toBeCloseTo(expected?.costUsd ?? -1, 12)
      }

      const shop = yield* usage(server.url, "?agent=shop&groupBy=instance")
      expect(shop.rows.map((row) => [row.instanceId, row.runs, row.inputTokens, row.outputTokens])).toEqual([
        ["acme", 2, 40, 20],
        ["globex", 1, 20, 10]
      ])
      expect(shop.total).toMatchObject({ runs: 3, inputTokens: 60, outputTokens: 30 })

      // A time range that ends before the runs holds none of them.
      const before = yield* usage(server.url, `?until=${(runs[0]?.run.createdAt as number)}`)
      expect(before.rows).toEqual([])
      expect(before.total).toMatchObject({ runs: 0, inputTokens: 0, outputTokens: 0, costUsd: 0 })

      const bad = yield* http(`${server.url}/api/usage?groupBy=week`)
      expect(bad.status).toBe(400)
      expect(bad.text).toContain("groupBy")
    }))

  it.scopedLive("a run that crosses maxTokensPerRun fails, naming the budget and the agent file to raise it in", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project({ shopBudget: "{ maxTokensPerRun: 40 }" }))
      const server = yield* startServer(root, { model })
      const { events, run } = yield* runTo(server.url, "shop", "loop forever")
      expect(run.status).toBe("failed")
      // 15 tokens a turn: the third turn makes 45, over 40.
      expect(run.error).toBe("the run used 45 tokens, over maxTokensPerRun 40 (raise it in agents/shop/agent.ts budget)")
      expect(run.usage).toMatchObject({ inputTokens: 30, outputTokens: 15 })
      expect(turnSums(events).turns).toBe(3)
      const exceeded = events.find((e) => e.type === "budget.exceeded")
      expect(exceeded?.data).toEqual({ budget: "maxTokensPerRun", limit: 40, used: 45, setIn: "agents/shop/agent.ts" })
      // The last turn's tool call is closed as not run.
      expect(events.map((e) => e.type).slice(-3)).toEqual(["budget.exceeded", "tool.call.failed", "run.failed"])
      expect(events.filter((e) => e.type === "tool.call.started")).toHaveLength(2)
    }))

  it.scopedLive("a provider that reports no usage has its turns counted by estimate: maxTokensPerRun still stops the run", () =>
    Effect.gen(function*() {
      // As a compatible server that ignores stream_options, or a proxy that drops the last chunk.
      const unreported: LanguageModel = {
        name: model.name,
        stream: (request) => Stream.filter(model.stream(request), (chunk) => chunk._tag !== "Usage")
      }
      const root = yield* tempProject(project({ shopBudget: "{ maxTokensPerRun: 200 }" }))
      const server = yield* startServer(root, { model: unreported })
      const { events, run } = yield* runTo(server.url, "shop", "loop forever")
      expect(run.status).toBe("failed")
      expect(run.error).toContain("over maxTokensPerRun 200")
      expect(run.usage.inputTokens).toBeGreaterThan(0)
      expect(run.usage.outputTokens).toBeGreaterThan(0)
      expect(events.find((e) => e.type === "budget.exceeded")?.data).toMatchObject({ budget: "maxTokensPerRun", limit: 200 })
    }))

  it.scopedLive("with onExceeded: \"ask\" a run over its budget waits for a person: approved, it goes on over that budget; denied, it fails", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project({ shopBudget: `{ maxTokensPerRun: 40, onExceeded: "ask" }` }))
      const server = yield* startServer(root, { model })
      const submit = Effect.map(http(`${server.url}/api/runs`, { body: { agent: "shop", message: "loop forever" } }), (r) => (r.json as { runId: string }).runId)
      /** The pending approval of the run, once it has asked. */
      const pendingOf = (runId: string) =>
        Effect.gen(function*() {
          for (let attempt = 0; attempt < 400; attempt++) {
            const pending = (yield* http(`${server.url}/api/approvals?status=pending`)).json as ReadonlyArray<{ id: string; runId: string; tool: string; input: unknown }>
            const found = pending.find((a) => a.runId === runId)
            if (found !== undefined) return found
            yield* Effect.sleep("25 millis")
          }
          return yield* Effect.die(new Error(`run ${runId} never asked`))
        })

      const approved = yield* submit
      const asked = yield* pendingOf(approved)
      expect(asked).toMatchObject({ tool: "budget:maxTokensPerRun", input: { budget: "maxTokensPerRun", limit: 40, used: 45 } })
      expect((yield* http(`${server.url}/api/runs/${approved}`)).json).toMatchObject({ status: "suspended" })
      yield* http(`${server.url}/api/approvals/${asked.id}`, { body: { decision: "approve" } })
      const goneOn = (yield* waitForRun(server.url, approved)) as unknown as { status: string; error: string }
      // Let go on over its budget, the run stopped only at maxTurns (10), asking no one again.
      expect(goneOn.status).toBe("failed")
      expect(goneOn.error).toContain("used all 10 model turns")
      const events = (yield* http(`${server.url}/api/runs/${approved}/events`)).json as ReadonlyArray<EventView>
      expect(turnSums(events).turns).toBe(10)
      expect(events.filter((e) => e.type === "approval.requested")).toHaveLength(1)
      expect(events.filter((e) => e.type === "run.suspended").map((e) => e.data)).toEqual([
        { reason: "budget", approvalId: asked.id, tool: "budget:maxTokensPerRun", budget: "maxTokensPerRun" }
      ])

      const denied = yield* submit
      const second = yield* pendingOf(denied)
      yield* http(`${server.url}/api/approvals/${second.id}`, { body: { decision: "deny", reason: "too costly" } })
      const ended = (yield* waitForRun(server.url, denied)) as unknown as { status: string; error: string }
      expect(ended.status).toBe("failed")
      expect(ended.error).toBe(
        "the run used 45 tokens, over maxTokensPerRun 40 (raise it in agents/shop/agent.ts budget); a person decided it may not go on: too costly"
      )
    }))

  it.scopedLive("a budget approved for the conversation lets its later runs go past it without asking again", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project({ shopBudget: `{ maxTokensPerRun: 40, onExceeded: "ask" }` }))
      const server = yield* startServer(root, { model })
      const first = (yield* http(`${server.url}/api/runs`, { body: { agent: "shop", message: "loop forever" } })).json as { runId: string; conversationId: string }
      let asked: { id: string; runId: string } | undefined
      for (let attempt = 0; attempt < 400 && asked === undefined; attempt++) {
        const pending = (yield* http(`${server.url}/api/approvals?status=pending`)).json as ReadonlyArray<{ id: string; runId: string }>
        asked = pending.find((a) => a.runId === first.runId)
        if (asked === undefined) yield* Effect.sleep("25 millis")
      }
      const decided = yield* http(`${server.url}/api/approvals/${asked!.id}`, { body: { decision: "approve", scope: "conversation" } })
      expect(decided.status).toBe(200)
      expect((yield* waitForRun(server.url, first.runId)).error).toContain("used all 10 model turns")

      const next = (yield* http(`${server.url}/api/runs`, { body: { agent: "shop", message: "loop forever", conversation: first.conversationId } })).json as { runId: string }
      const ended = (yield* waitForRun(server.url, next.runId)) as unknown as { status: string; error: string }
      expect(ended.error).toContain("used all 10 model turns")
      const events = (yield* http(`${server.url}/api/runs/${next.runId}/events`)).json as ReadonlyArray<EventView>
      expect(events.filter((e) => e.type === "approval.requested")).toEqual([])
      expect(events.filter((e) => e.type === "approval.decided").map((e) => e.data)).toEqual([
        { toolCallId: "budget:maxTokensPerRun", tool: "budget:maxTokensPerRun", status: "approved", grantedBy: asked!.id }
      ])
      expect(events.filter((e) => e.type === "budget.exceeded")).toHaveLength(1)
    }))

  it.scopedLive("maxCostPerRun from the config fails a run, naming the config and the agent file", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project({
        config: `{ prices: { "scripted:script": { input: 1000, output: 2000 } }, budget: { maxCostPerRun: 0.015 } }`
      }))
      const server = yield* startServer(root, { model })
      const { events, run } = yield* runTo(server.url, "desk", "echo then answer")
      // $0.02 a turn: the first, which calls a tool, is over.
      expect(run.status).toBe("failed")
      expect(run.error).toBe(
        "the run used $0.02, over maxCostPerRun $0.015 (raise it in foundry.config.ts budget, or for this agent alone in agents/desk/agent.ts budget)"
      )
      expect(events.find((e) => e.type === "budget.exceeded")?.data).toMatchObject({ budget: "maxCostPerRun", setIn: "foundry.config.ts" })
      expect(turnSums(events).turns).toBe(1)
    }))

  it.scopedLive("a final answer that goes past the run's budget is kept: the run completes with it and says the budget it went past", () =>
    Effect.gen(function*() {
      for (const policy of ["fail", "ask"]) {
        const root = yield* tempProject(project({
          config: `{ prices: { "scripted:script": { input: 1000, output: 2000 } }, budget: { maxCostPerRun: 0.025, onExceeded: "${policy}" } }`
        }))
        const server = yield* startServer(root, { model })
        const { events, run } = yield* runTo(server.url, "desk", "echo then answer")
        // $0.02 a turn: the second, the answer, makes $0.04; it was paid for, and nothing more is spent.
        expect(run, policy).toMatchObject({ status: "completed", output: "done" })
        expect(run.usage.costUsd).toBeCloseTo(0.04)
        expect(events.filter((e) => e.type === "budget.exceeded").map((e) => e.data)).toEqual([
          { budget: "maxCostPerRun", limit: 0.025, used: expect.closeTo(0.04), setIn: "foundry.config.ts" }
        ])
        expect(events.filter((e) => e.type === "approval.requested")).toEqual([])
        expect(events.map((e) => e.type).slice(-2)).toEqual(["budget.exceeded", "run.completed"])
      }
    }))

  it.scopedLive("a per-instance daily token limit refuses the next run of that instance, and only of that instance", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project({ config: "{ budget: { maxTokensPerInstancePerDay: 30 } }" }))
      const server = yield* startServer(root, { model })
      // Two turns of 15 tokens: the instance reaches its 30 for today.
      const first = yield* runTo(server.url, "shop", "echo once", "acme")
      expect(first.run.status).toBe("completed")
      const second = yield* runTo(server.url, "shop", "echo again", "acme")
      expect(second.run.status).toBe("failed")
      expect(second.run.error).toBe(
        "instance \"acme\" used 30 tokens today (UTC), reaching maxTokensPerInstancePerDay 30 " +
          "(raise it in foundry.config.ts budget, or for this agent alone in agents/shop/agent.ts budget)"
      )
      // Refused before asking the model.
      expect(second.events.filter((e) => e.type === "model.turn.started")).toEqual([])
      expect(second.events.find((e) => e.type === "budget.exceeded")?.data).toMatchObject({
        budget: "maxTokensPerInstancePerDay",
        limit: 30,
        used: 30
      })
      const other = yield* runTo(server.url, "shop", "echo elsewhere", "globex")
      expect(other.run.status).toBe("completed")
    }))
})
