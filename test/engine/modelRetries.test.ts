/**
 * Model retries, counted through a run's events: every `model.retry` is a failure that another
 * call to the model followed, so the events match the retries the model really saw.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import type { LanguageModel } from "../../src/models/Model.js"
import * as Scripted from "../../src/models/scripted.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

interface EventView {
  readonly type: string
  readonly data: Record<string, unknown>
}

/** A project with one agent and `modelRetry.times` retries, on a millisecond's backoff. */
const retryProject = (times: number, backoff = "1 millis") => ({
  "agents/flaky/agent.ts": `import { defineAgent } from "foundry"
export default defineAgent({ description: "Answers once the model is up", model: "demo" })
`,
  "foundry.config.ts": `import { defineConfig } from "foundry"
export default defineConfig({ modelRetry: { times: ${times}, base: "${backoff}", max: "${backoff}" } })
`
})

/** A model that answers 503 on its first `failures` calls and then answers; it counts its calls. */
const flakyModel = (failures: number) => {
  const calls = { count: 0 }
  const model = Scripted.make(() => {
    calls.count++
    return calls.count <= failures
      ? { error: { kind: "transient", status: 503, message: `unavailable (call ${calls.count})` } }
      : { text: "up again" }
  }, "flaky")
  return { model, calls }
}

const runOn = (url: string) =>
  Effect.gen(function*() {
    const created = yield* http(`${url}/api/runs`, { body: { agent: "flaky", message: "hello" } })
    expect(created.status).toBe(202)
    const { runId } = created.json as { runId: string }
    const run = yield* waitForRun(url, runId)
    const events = (yield* http(`${url}/api/runs/${runId}/events`)).json as ReadonlyArray<EventView>
    return { run, retries: events.filter((e) => e.type === "model.retry") }
  })

describe("model retries", () => {
  it.scopedLive("a model that fails twice and then answers gives exactly two model.retry events", () =>
    Effect.gen(function*() {
      const { calls, model } = flakyModel(2)
      const server = yield* startServer(yield* tempProject(retryProject(4)), { model })
      const { retries, run } = yield* runOn(server.url)
      expect(run).toMatchObject({ status: "completed", output: "up again" })
      expect(calls.count).toBe(3)
      expect(retries.map((e) => e.data.error)).toEqual(["unavailable (call 1)", "unavailable (call 2)"])
    }))

  it.scopedLive("an answer with nothing in it is asked again, and a model that only answers nothing fails the run saying so", () =>
    Effect.gen(function*() {
      const calls = { count: 0 }
      const model = Scripted.make(() => (calls.count++ < 1 ? { text: "" } : { text: "here I am" }), "quiet")
      const server = yield* startServer(yield* tempProject(retryProject(2)), { model })
      const { retries, run } = yield* runOn(server.url)
      expect(run).toMatchObject({ status: "completed", output: "here I am" })
      expect(retries.map((e) => e.data.error)).toEqual(["the model answered nothing: no text and no tool call"])

      const silent = yield* startServer(yield* tempProject(retryProject(1)), { model: Scripted.make(() => ({ text: "" }), "silent") })
      const ended = yield* runOn(silent.url)
      expect(ended.run).toMatchObject({ status: "failed" })
      expect(String(ended.run.error)).toContain("the model answered nothing: no text and no tool call")
    }))

  it.scopedLive("a model that sends nothing for modelRetry.idle is asked again, then fails the run saying so", () =>
    Effect.gen(function*() {
      const hung: LanguageModel = { name: "hung", stream: () => Stream.never }
      const project = {
        ...retryProject(1),
        "foundry.config.ts": `import { defineConfig } from "foundry"
export default defineConfig({ modelRetry: { times: 1, base: "1 millis", max: "1 millis", idle: "200 millis" } })
`
      }
      const server = yield* startServer(yield* tempProject(project), { model: hung })
      const { retries, run } = yield* runOn(server.url)
      expect(run).toMatchObject({ status: "failed" })
      expect(String(run.error)).toContain("the model sent nothing for 200ms (modelRetry.idle)")
      expect(retries).toHaveLength(1)
    }))

  it.scopedLive("a model that always fails with modelRetry.times: 3 gives exactly three model.retry events", () =>
    Effect.gen(function*() {
      const { calls, model } = flakyModel(Number.POSITIVE_INFINITY)
      const server = yield* startServer(yield* tempProject(retryProject(3)), { model })
      const { retries, run } = yield* runOn(server.url)
      expect(run.status).toBe("failed")
      expect(run.error).toContain("unavailable (call 4)")
      // The first call and three retries; the fourth failure ends the run and is no retry.
      expect(calls.count).toBe(4)
      expect(retries.map((e) => e.data.error)).toEqual(["unavailable (call 1)", "unavailable (call 2)", "unavailable (call 3)"])
    }))

  it.scopedLive("an adapter that crashes fails the run as a permanent error, without a retry", () =>
    Effect.gen(function*() {
      const calls = { count: 0 }
      const model = Scripted.make(() => {
        calls.count++
        throw new Error("boom in the adapter")
      }, "crashing")
      const server = yield* startServer(yield* tempProject(retryProject(4)), { model })
      const { retries, run } = yield* runOn(server.url)
      expect(run.status).toBe("failed")
      expect(run.error).toContain("the model adapter crashed: boom in the adapter")
      expect(calls.count).toBe(1)
      expect(retries).toEqual([])
    }))

  it.scopedLive("modelRetry.times: 0 makes one call and reports no retry", () =>
    Effect.gen(function*() {
      const { calls, model } = flakyModel(Number.POSITIVE_INFINITY)
      const server = yield* startServer(yield* tempProject(retryProject(0)), { model })
      const { retries, run } = yield* runOn(server.url)
      expect(run.status).toBe("failed")
      expect(calls.count).toBe(1)
      expect(retries).toEqual([])
    }))

  it.scopedLive("a run cancelled while it waits to retry reports no retry that never happened", () =>
    Effect.gen(function*() {
      const { calls, model } = flakyModel(Number.POSITIVE_INFINITY)
      const server = yield* startServer(yield* tempProject(retryProject(3, "30 seconds")), { model })
      const created = yield* http(`${server.url}/api/runs`, { body: { agent: "flaky", message: "hello" } })
      const { runId } = created.json as { runId: string }
      for (let i = 0; i < 200 && calls.count === 0; i++) yield* Effect.sleep("10 millis")
      // Well inside the 30-second backoff after the first failure.
      yield* Effect.sleep("200 millis")
      const cancelled = yield* http(`${server.url}/api/runs/${runId}/cancel`, { method: "POST" })
      expect(cancelled.status).toBe(200)
      expect(yield* waitForRun(server.url, runId)).toMatchObject({ status: "cancelled" })
      const events = (yield* http(`${server.url}/api/runs/${runId}/events`)).json as ReadonlyArray<EventView>
      expect(calls.count).toBe(1)
      expect(events.filter((e) => e.type === "model.retry")).toEqual([])
    }))
})
