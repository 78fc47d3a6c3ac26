/**
 * Model fallbacks: an agent that names several models moves a turn to the next one only when the
 * current one keeps failing transiently after its retries, or refuses as no model this key may use
 * (403, 404); another permanent failure fails the run.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { http, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

interface EventView {
  readonly type: string
  readonly data: Record<string, unknown>
}

/** A project whose agent falls back from `primary` (failing with `error` on every call) to `backup`. */
const fallbackProject = (error: { readonly kind: "transient" | "permanent"; readonly status: number }) => ({
  "agents/resilient/agent.ts": `import { defineAgent, Scripted } from "foundry"

export default defineAgent({
  description: "Answers on whichever model is up",
  model: [
    Scripted.make(() => ({ error: { kind: ${JSON.stringify(error.kind)}, status: ${error.status}, message: "primary says ${error.status}" } }), "primary"),
    Scripted.make(() => ({ text: "answered by the backup" }), "backup")
  ]
})
`,
  "foundry.config.ts": `import { defineConfig } from "foundry"
export default defineConfig({ modelRetry: { times: 1, base: "1 millis", max: "1 millis" } })
`
})

const runOn = (url: string) =>
  Effect.gen(function*() {
    const created = yield* http(`${url}/api/runs`, { body: { agent: "resilient", message: "hello" } })
    expect(created.status).toBe(202)
    const { runId } = created.json as { runId: string }
    const run = yield* waitForRun(url, runId)
    const events = (yield* http(`${url}/api/runs/${runId}/events`)).json as ReadonlyArray<EventView>
    return { run, events }
  })

describe("model fallbacks", () => {
  it.scopedLive("a model that still answers 500 after its retries hands the turn to the next model", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(fallbackProject({ kind: "transient", status: 500 })))
      const { events, run } = yield* runOn(server.url)
      expect(run).toMatchObject({ status: "completed", output: "answered by the backup" })
      // One retry (modelRetry.times: 1) on the primary, then the backup: one event each.
      expect(events.map((e) => e.type)).toEqual([
        "run.queued",
        "run.started",
        "model.turn.started",
        "model.retry",
        "model.fallback",
        "model.turn.completed",
        "run.completed"
      ])
      expect(events.find((e) => e.type === "model.retry")?.data).toMatchObject({ model: "scripted:primary", status: 500 })
      expect(events.find((e) => e.type === "model.fallback")?.data).toMatchObject({
        from: "scripted:primary",
        to: "scripted:backup",
        status: 500,
        error: "primary says 500"
      })
      expect(events.find((e) => e.type === "model.turn.completed")?.data.model).toBe("scripted:backup")
    }))

  it.scopedLive("a model that is not there (404) or not open to the key (403) hands the turn to the next at once, without retries", () =>
    Effect.gen(function*() {
      for (const status of [404, 403]) {
        const server = yield* startServer(yield* tempProject(fallbackProject({ kind: "permanent", status })))
        const { events, run } = yield* runOn(server.url)
        expect(run).toMatchObject({ status: "completed", output: "answered by the backup" })
        const types = events.map((e) => e.type)
        expect(types).not.toContain("model.retry")
        expect(events.find((e) => e.type === "model.fallback")?.data).toMatchObject({ from: "scripted:primary", to: "scripted:backup", status })
      }
    }))

  it.scopedLive("a permanent failure (400) does not fall back: the run fails with the first model's error", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(fallbackProject({ kind: "permanent", status: 400 })))
      const { events, run } = yield* runOn(server.url)
      expect(run.status).toBe("failed")
      expect(run.error).toContain("scripted:primary")
      expect(run.error).toContain("primary says 400")
      const types = events.map((e) => e.type)
      expect(types).not.toContain("model.fallback")
      expect(types).not.toContain("model.retry")
      expect(types).not.toContain("model.turn.completed")
    }))

  it.scopedLive("the manifest lists an agent's models in the order they are tried", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(fallbackProject({ kind: "transient", status: 500 })))
      const { routes } = (yield* http(`${server.url}/api/routes`)).json as {
        readonly routes: ReadonlyArray<{ readonly id: string; readonly model?: string }>
      }
      expect(routes.find((r) => r.id === "resilient")?.model).toBe("scripted:primary -> scripted:backup")
    }))
})
