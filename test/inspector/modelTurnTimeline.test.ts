/**
 * A run's page in Chromium says what a model turn went through: a conversation that crosses the
 * hard threshold against a strict Chat Completions server shows the turn whose older turns were
 * summarized with a "compacted" tag, each step with its tokens before and after, and the summary
 * call's tokens beside the turn's own; a turn whose model failed says it was asked again and
 * handed to the next model, and why; a run whose `/v1` client sent a tool result the conversation
 * records cut shows it whole.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import OpenAI from "openai"
import { ModelResolverLive } from "../../src/models/ModelResolverLive.js"
import * as OpenAi from "../../src/models/openai.js"
import { browserPage, skipBrowser } from "../support/browser.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { error, type ReplyFn, strictOpenAi, text, toolCalls } from "../support/strictOpenAi.js"
import { clientRanFetchPage } from "../support/clientHistory.js"
import { tempProject } from "../support/tempProject.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const project = {
  "agents/reader/agent.ts": `import { defineAgent } from "foundry"
import fetchPage from "./tools/fetch-page.tool.js"

export default defineAgent({ description: "Reads pages", tools: [fetchPage], maxTurns: 4 })
`,
  "agents/reader/tools/fetch-page.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Fetch a page",
  input: Schema.Struct({ page: Schema.Number }),
  output: Schema.String,
  run: ({ page }) => Effect.succeed("page " + page + ": " + "lorem ipsum ".repeat(330))
})
`,
  "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ context: { windows: { "openai:gpt-4.1-mini": 5000 } } })\n`
}

/** A page for each message, then a short answer; a summary request gets a short summary, of 420 and 12 tokens. */
const reader: ReplyFn = (request) => {
  const system = request.messages.find((m) => m.role === "system")
  if (system !== undefined && system.role === "system" && system.content.startsWith("You compact")) {
    return text("summary: pages were read", { promptTokens: 420, completionTokens: 12 })
  }
  const lastUser = request.messages.findLastIndex((m) => m.role === "user")
  if (request.messages.slice(lastUser + 1).length > 0) return text("read 1 page")
  const last = request.messages[lastUser]
  const page = Number(/page (\d+)/.exec(last !== undefined && last.role === "user" ? last.content : "")?.[1] ?? 0)
  return toolCalls({ id: `call_${page}`, name: "fetch-page", arguments: JSON.stringify({ page }) })
}

describe.skipIf(skipBrowser)("a model turn on a run's page in Chromium", () => {
  it.scopedLive("the turn whose older turns were summarized is tagged compacted, lists each step, and counts the summary's tokens", () =>
    Effect.gen(function*() {
      const provider = yield* strictOpenAi({ otherwise: reader })
      const root = yield* tempProject(project)
      const server = yield* startServer(root, { model: OpenAi.make({ model: "gpt-4.1-mini", apiKey: "test", baseURL: provider.url }) })
      // Long messages, which cannot be shortened: the hard threshold is crossed within a few pages.
      let conversation: string | undefined
      let summarized: string | undefined
      let summaryCalls = 0
      for (let page = 1; page <= 10 && summarized === undefined; page++) {
        const created = yield* http(`${server.url}/api/runs`, {
          body: { agent: "reader", message: `read page ${page}. ${"Please read it carefully. ".repeat(96)}`, ...(conversation === undefined ? {} : { conversation }) }
        })
        const { conversationId, runId } = created.json as { runId: string; conversationId: string }
        conversation = conversationId
        expect(yield* waitForRun(server.url, runId)).toMatchObject({ status: "completed" })
        const events = (yield* http(`${server.url}/api/runs/${runId}/events`)).json as ReadonlyArray<{ type: string }>
        summaryCalls = events.filter((e) => e.type === "context.summary.completed").length
        if (summaryCalls > 0) summarized = runId
      }
      expect(summarized).toBeDefined()

      const page = yield* browserPage
      yield* promise(() => page.goto(`${server.url}/runs/${summarized}`))
      const compacted = page.locator("[data-testid=waterfall] .span.model", { has: page.locator("[data-testid=span-compacted]") })
      yield* promise(() => compacted.first().waitFor())
      const turn = compacted.filter({ has: page.locator(".span-meta", { hasText: "summary" }) })
      // The summary's tokens beside the turn's own, each of its calls (a long history is summarized in pieces) counted.
      expect(yield* promise(() => turn.locator(".span-meta").textContent())).toMatch(new RegExp(` · \\d+/\\d+ tok \\+ ${420 * summaryCalls}/${12 * summaryCalls} summary$`))
      yield* promise(() => turn.locator(".span-row").click())
      // The row opens on the page's next draw.
      const listed = turn.locator("[data-testid=span-compaction] li")
      yield* promise(() => listed.first().waitFor())
      const steps = yield* promise(() => listed.allTextContents())
      expect(steps).toContainEqual(expect.stringMatching(/^older tool results shortened: [\d,]+ → [\d,]+ tokens$/))
      expect(steps.filter((step) => step === "summary by openai:gpt-4.1-mini: 420/12 tokens")).toHaveLength(summaryCalls)
      expect(steps).toContainEqual(expect.stringMatching(/^older turns summarized: [\d,]+ → [\d,]+ tokens$/))
    }))

  it.scopedLive("a turn whose model failed is tagged, and says it was asked again and handed to the next model, and why", () =>
    Effect.gen(function*() {
      // gpt-4.1-mini fails every request; gpt-4.1-nano, the agent's next model, answers.
      const provider = yield* strictOpenAi({
        otherwise: (request, index) =>
          typeof request.body === "object" && request.body !== null && "model" in request.body && request.body.model === "gpt-4.1-mini"
            ? error(500, "The server had an error while processing your request.", { type: "server_error" })
            : reader(request, index)
      })
      const root = yield* tempProject({
        ...project,
        "agents/reader/agent.ts": (project["agents/reader/agent.ts"] ?? "").replace("maxTurns: 4", `maxTurns: 4, model: ["openai:gpt-4.1-mini", "openai:gpt-4.1-nano"]`),
        "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ modelRetry: { times: 1, base: "1 millis", max: "1 millis" } })\n`
      })
      const models = ModelResolverLive.pipe(
        Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["OPENAI_API_KEY", "test"], ["OPENAI_BASE_URL", provider.url]])))),
        Layer.orDie
      )
      const server = yield* startServer(root, { models })
      const created = yield* http(`${server.url}/api/runs`, { body: { agent: "reader", message: "read page 1" } })
      const runId = (created.json as { runId: string }).runId
      expect(yield* waitForRun(server.url, runId)).toMatchObject({ status: "completed", output: "read 1 page" })

      const page = yield* browserPage
      yield* promise(() => page.goto(`${server.url}/runs/${runId}`))
      const turn = page.locator("[data-testid=waterfall] .span.model", { has: page.locator("[data-testid=span-retried]") }).first()
      yield* promise(() => turn.waitFor())
      expect(yield* promise(() => turn.locator("[data-testid=span-retried]").textContent())).toBe("fell back")
      yield* promise(() => turn.locator(".span-row").click())
      const listed = turn.locator("[data-testid=span-retries] li")
      yield* promise(() => listed.first().waitFor())
      expect(yield* promise(() => listed.allTextContents())).toEqual([
        "openai:gpt-4.1-mini failed (OpenAI returned 500: The server had an error while processing your request.); asked again",
        "fell back from openai:gpt-4.1-mini to openai:gpt-4.1-nano (OpenAI returned 500: The server had an error while processing your request.)"
      ])
    }))

  it.scopedLive("a run whose /v1 client sent a tool result the conversation records cut is tagged, and shows that result whole", () =>
    Effect.gen(function*() {
      const provider = yield* strictOpenAi({ otherwise: reader })
      const root = yield* tempProject(project)
      const server = yield* startServer(root, { model: OpenAi.make({ model: "gpt-4.1-mini", apiKey: "test", baseURL: provider.url }) })
      const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "not-needed-on-loopback", maxRetries: 0 })
      // The client ran the tool itself: over the agent's result limit (a quarter of the 5,000-token window).
      const full = `page 1: ${"lorem ipsum ".repeat(2500)}`
      const { response } = yield* promise(() =>
        client.chat.completions.create({
          model: "reader",
          messages: clientRanFetchPage(full, "and now?")
        }).withResponse()
      )
      const runId = response.headers.get("x-foundry-run") ?? ""
      expect(yield* waitForRun(server.url, runId)).toMatchObject({ status: "completed" })

      const page = yield* browserPage
      yield* promise(() => page.goto(`${server.url}/runs/${runId}`))
      const run = page.locator("[data-testid=waterfall] .span.run", { has: page.locator("[data-testid=span-client-results-cut]") })
      yield* promise(() => run.waitFor())
      yield* promise(() => run.locator(".span-row").first().click())
      const cut = run.locator("[data-testid=span-cut-results]")
      yield* promise(() => cut.waitFor())
      expect(yield* promise(() => cut.locator("div > div").first().textContent())).toBe(`fetch-page · call call_client · ${full.length.toLocaleString("en-US")} characters`)
      expect(yield* promise(() => cut.locator("pre").textContent())).toBe(full)
    }))
})
