import { tmpdir } from "node:os"
import { join } from "node:path"
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { durableProject, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { http, startServer } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const realSleep = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

interface RunBody {
  readonly id: string
  readonly status: string
  readonly input: string
  readonly output?: string
  readonly instanceId: string
  readonly conversationId: string
  readonly source?: { readonly schedule: string; readonly scheduledFor: string }
}

const runs = (url: string) => Effect.map(http(`${url}/api/runs?limit=1000`), (r) => r.json as Array<RunBody>)

const until = (url: string, check: (all: Array<RunBody>) => boolean) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 200; attempt++) {
      const all = yield* runs(url)
      if (check(all)) return all
      yield* realSleep(20)
    }
    return yield* runs(url)
  })

describe("the tools agents have for their own time (on the test clock)", () => {
  it.scoped("an agent schedules a follow-up and sleeps; both wake it, the sleep in the same conversation", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-07-01T10:00:00Z"))
      const log = join(tmpdir(), `foundry-timers-${randomUUID()}.log`)
      const server = yield* startServer(yield* tempProject(durableProject(log)), { model: plannedModel })
      const created = yield* http(`${server.url}/api/runs`, {
        body: {
          agent: "worker",
          instance: "acme",
          message: plan({
            calls: [
              { name: "foundry_schedule", arguments: { in: "2 hours", message: plan({ calls: [{ name: "record", arguments: { line: "follow-up" } }] }) } },
              { name: "foundry_sleep", arguments: { for: "1 hour", message: plan({ calls: [{ name: "record", arguments: { line: "woke" } }] }) } }
            ]
          })
        }
      })
      const first = created.json as { runId: string; conversationId: string }
      yield* until(server.url, (all) => all.some((r) => r.id === first.runId && r.status === "completed"))
      for (let hour = 0; hour < 3; hour++) {
        yield* TestClock.adjust("1 hour")
        yield* realSleep(60)
      }
      const all = yield* until(server.url, (all) => all.filter((r) => r.source !== undefined && r.status === "completed").length >= 2)
      const woke = all.find((r) => r.input.includes("woke"))
      const followUp = all.find((r) => r.input.includes("follow-up"))
      expect(woke).toMatchObject({ status: "completed", instanceId: "acme", conversationId: first.conversationId })
      expect(woke?.source?.scheduledFor).toBe("2026-07-01T11:00:00.000Z")
      expect(followUp).toMatchObject({ status: "completed", instanceId: "acme" })
      expect(followUp?.conversationId).not.toBe(first.conversationId)
      expect(followUp?.source?.scheduledFor).toBe("2026-07-01T12:00:00.000Z")
    }))

  it.scoped("an agent cannot see or cancel another instance's schedules", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-07-01T10:00:00Z"))
      const log = join(tmpdir(), `foundry-timers-${randomUUID()}.log`)
      const server = yield* startServer(yield* tempProject(durableProject(log)), { model: plannedModel })
      const ask = (instance: string, calls: ReadonlyArray<{ name: string; arguments: unknown }>) =>
        Effect.gen(function*() {
          const created = (yield* http(`${server.url}/api/runs`, { body: { agent: "worker", instance, message: plan({ calls }) } })).json as { runId: string }
          const done = yield* until(server.url, (all) => all.some((r) => r.id === created.runId && r.status === "completed"))
          return done.find((r) => r.id === created.runId)!.output ?? ""
        })
      const made = yield* ask("alpha", [{ name: "foundry_schedule", arguments: { every: "1 day", message: "daily" } }])
      const id = /"id":"(agent:[^"]+)"/.exec(made)?.[1]
      expect(id).toBeDefined()
      expect(yield* ask("alpha", [{ name: "foundry_schedules", arguments: { action: "list" } }])).toContain(id!)
      expect(yield* ask("beta", [{ name: "foundry_schedules", arguments: { action: "list" } }])).toBe("done: []")
      expect(yield* ask("beta", [{ name: "foundry_schedules", arguments: { action: "cancel", id } }])).toContain("you have no schedule")
      expect(yield* ask("alpha", [{ name: "foundry_schedules", arguments: { action: "list" } }])).toContain(id!)
    }))

  it.scoped("a sleeping conversation is re-armed from the store after a restart and wakes once", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-07-01T10:00:00Z"))
      const log = join(tmpdir(), `foundry-timers-${randomUUID()}.log`)
      const storeFile = join(tmpdir(), `foundry-timers-${randomUUID()}.db`)
      const root = yield* tempProject(durableProject(log))
      const conversationId = yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* startServer(root, { model: plannedModel, storeFile })
        const created = (yield* http(`${server.url}/api/runs`, {
          body: {
            agent: "worker",
            message: plan({ calls: [{ name: "foundry_sleep", arguments: { for: "30 minutes", message: plan({ calls: [{ name: "record", arguments: { line: "awake" } }] }) } }] })
          }
        })).json as { runId: string; conversationId: string }
        yield* until(server.url, (all) => all.some((r) => r.id === created.runId && r.status === "completed"))
        return created.conversationId
      }))
      const server = yield* startServer(root, { model: plannedModel, storeFile })
      yield* TestClock.adjust("1 hour")
      yield* realSleep(100)
      yield* TestClock.adjust("1 hour")
      const all = yield* until(server.url, (all) => all.some((r) => r.source !== undefined && r.status === "completed"))
      const wakes = all.filter((r) => r.source !== undefined)
      expect(wakes).toHaveLength(1)
      expect(wakes[0]).toMatchObject({ conversationId, source: { scheduledFor: "2026-07-01T10:30:00.000Z" } })
    }))
})
