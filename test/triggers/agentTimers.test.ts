import { tmpdir } from "node:os"
import { join } from "node:path"
import { randomUUID } from "node:crypto"
import Database from "better-sqlite3"
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { durableProject, plan } from "../support/durableProject.js"
import * as Scripted from "../../src/models/scripted.js"
import { plannedModel } from "../support/plannedModel.js"
import { http, startServer } from "../support/server.js"
import { agentFile, tempProject } from "../support/tempProject.js"

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

type Call = { readonly name: string; readonly arguments: unknown }

/** Asks the worker of `instance` to make `calls`; its output lists the results, joined by " | ". */
const askOn = (url: string) => (instance: string, calls: ReadonlyArray<Call>) =>
  Effect.gen(function*() {
    const created = (yield* http(`${url}/api/runs`, { body: { agent: "worker", instance, message: plan({ calls }) } })).json as { runId: string }
    const done = yield* until(url, (all) => all.some((r) => r.id === created.runId && r.status === "completed"))
    return done.find((r) => r.id === created.runId)!.output ?? ""
  })

const agentTimerIds = (url: string) =>
  Effect.map(http(`${url}/api/schedules`), (r) => (r.json as Array<{ id: string }>).map((s) => s.id).filter((id) => id.startsWith("agent:")))

const schedule = (timing: Record<string, string>): Call => ({ name: "foundry_schedule", arguments: { ...timing, message: "later" } })

/**
 * At 10:00 on the test clock, the worker of a project on a store of its own goes to sleep for 30
 * minutes, on a server that is then stopped: the project, the store and the sleeping conversation.
 */
const sleptHalfAnHour = Effect.gen(function*() {
  yield* TestClock.setTime(Date.parse("2026-07-01T10:00:00Z"))
  const log = join(tmpdir(), `foundry-timers-${randomUUID()}.log`)
  const storeFile = join(tmpdir(), `foundry-timers-${randomUUID()}.db`)
  const root = yield* tempProject(durableProject(log, "", { timers: true }))
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
  return { conversationId, root, storeFile }
})

describe("the tools agents have for their own time (on the test clock)", () => {
  it.scoped("an agent schedules a follow-up and sleeps; both wake it, the sleep in the same conversation", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-07-01T10:00:00Z"))
      const log = join(tmpdir(), `foundry-timers-${randomUUID()}.log`)
      const server = yield* startServer(yield* tempProject(durableProject(log, "", { timers: true })), { model: plannedModel })
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

  it.scoped("timer.armed names the timer a call armed or resumed and when it fires; a call that arms none has no such event", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-07-01T10:00:00Z"))
      const log = join(tmpdir(), `foundry-timers-${randomUUID()}.log`)
      const server = yield* startServer(yield* tempProject(durableProject(log, "", { timers: true })), { model: plannedModel })
      /** The `data` of the timer.armed events of a run of the worker making `calls`. */
      const armedBy = (calls: ReadonlyArray<Call>) =>
        Effect.gen(function*() {
          const created = (yield* http(`${server.url}/api/runs`, { body: { agent: "worker", message: plan({ calls }) } })).json as { runId: string }
          yield* until(server.url, (all) => all.some((r) => r.id === created.runId && r.status === "completed"))
          const events = (yield* http(`${server.url}/api/runs/${created.runId}/events`)).json as ReadonlyArray<{ type: string; data: unknown }>
          return events.filter((e) => e.type === "timer.armed").map((e) => e.data)
        })
      const armed = yield* armedBy([
        { name: "foundry_sleep", arguments: { for: "30 minutes", message: "wake" } },
        schedule({ every: "1 day" }),
        { name: "foundry_schedules", arguments: { action: "list" } }
      ])
      const timers = (yield* http(`${server.url}/api/schedules`)).json as ReadonlyArray<{ id: string; timing: Record<string, string> }>
      const sleep = timers.find((t) => "at" in t.timing)?.id
      const daily = timers.find((t) => "every" in t.timing)?.id
      expect([sleep, daily]).not.toContain(undefined)
      expect(armed).toEqual([
        { tool: "foundry_sleep", timerId: sleep, firesAt: "2026-07-01T10:30:00.000Z" },
        { tool: "foundry_schedule", timerId: daily, firesAt: "2026-07-02T10:00:00.000Z" }
      ])
      // Paused, it is armed no more; resumed, it is armed again.
      expect(yield* armedBy([{ name: "foundry_schedules", arguments: { action: "pause", id: daily } }])).toEqual([])
      expect(yield* armedBy([{ name: "foundry_schedules", arguments: { action: "resume", id: daily } }])).toEqual([
        { tool: "foundry_schedules", timerId: daily, firesAt: "2026-07-02T10:00:00.000Z" }
      ])
    }))

  it.scoped("a timer is armed with the answer of the call that arms it, after the call: a crash leaves no timer its conversation does not know of", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-07-01T10:00:00Z"))
      const log = join(tmpdir(), `foundry-timers-${randomUUID()}.log`)
      const server = yield* startServer(yield* tempProject(durableProject(log, "", { timers: true })), { model: plannedModel })
      // The store itself says what it held as each timer was armed: the calls and the answers to
      // calls stored when the timer's row went in (those of its own transaction too).
      const db = new Database(server.storeFile)
      db.exec(`CREATE TABLE armed_beside (timer TEXT, calls INTEGER, answers INTEGER);
        CREATE TRIGGER armed_beside AFTER INSERT ON foundry_activations
        BEGIN INSERT INTO armed_beside SELECT NEW.id,
          (SELECT COUNT(*) FROM foundry_messages WHERE body LIKE '%"foundry_sleep"%' AND body LIKE '%"_tag":"assistant"%'),
          (SELECT COUNT(*) FROM foundry_messages WHERE body LIKE '%"_tag":"tool"%'); END`)
      yield* askOn(server.url)("acme", [{ name: "foundry_sleep", arguments: { for: "1 hour", message: "wake" } }])
      const armed = db.prepare("SELECT timer, calls, answers FROM armed_beside").all()
      db.close()
      expect(armed).toEqual([{ timer: expect.stringMatching(/^agent:tmr_/), calls: 1, answers: 1 }])
    }))

  it.scoped("an agent cannot see or cancel another instance's schedules", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-07-01T10:00:00Z"))
      const log = join(tmpdir(), `foundry-timers-${randomUUID()}.log`)
      const server = yield* startServer(yield* tempProject(durableProject(log, "", { timers: true })), { model: plannedModel })
      const ask = askOn(server.url)
      const made = yield* ask("alpha", [{ name: "foundry_schedule", arguments: { every: "1 day", message: "daily" } }])
      const id = /"id":"(agent:[^"]+)"/.exec(made)?.[1]
      expect(id).toBeDefined()
      expect(yield* ask("alpha", [{ name: "foundry_schedules", arguments: { action: "list" } }])).toContain(id!)
      expect(yield* ask("beta", [{ name: "foundry_schedules", arguments: { action: "list" } }])).toBe("done: []")
      expect(yield* ask("beta", [{ name: "foundry_schedules", arguments: { action: "cancel", id } }])).toContain("you have no schedule")
      expect(yield* ask("alpha", [{ name: "foundry_schedules", arguments: { action: "list" } }])).toContain(id!)
    }))

  it.scoped("an instance's timer tools read its own timers only: another instance's timer that does not decode leaves them working", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-07-01T10:00:00Z"))
      const log = join(tmpdir(), `foundry-timers-${randomUUID()}.log`)
      const server = yield* startServer(yield* tempProject(durableProject(log, "", { timers: true })), { model: plannedModel })
      const ask = askOn(server.url)
      const theirs = /"id":"(agent:[^"]+)"/.exec(yield* ask("beta", [schedule({ every: "1 day" })]))?.[1]
      expect(theirs).toBeDefined()
      // A read of beta's timer would decode it and fail: alpha's calls show whether they read it.
      const db = new Database(server.storeFile)
      db.prepare("UPDATE foundry_activations SET spec = '{}' WHERE id = ?").run(theirs)
      db.close()
      const results = (yield* ask("alpha", [
        schedule({ every: "1 day" }),
        { name: "foundry_sleep", arguments: { for: "1 hour", message: "wake" } },
        { name: "foundry_schedules", arguments: { action: "list" } }
      ])).replace(/^done: /, "").split(" | ")
      const mine = results.slice(0, 2).map((result) => /^\{"id":"(agent:[^"]+)"/.exec(result)?.[1])
      expect(mine).not.toContain(undefined)
      const list = JSON.parse(results[2] ?? "null") as Array<{ id: string }>
      expect(list.map((timer) => timer.id).toSorted()).toEqual(mine.toSorted())
      expect(yield* ask("alpha", [{ name: "foundry_schedules", arguments: { action: "cancel", id: theirs } }])).toContain("you have no schedule")
    }))

  it.scoped("a fired sleep is listed as done for a day, then deleted from the store; a timer still to fire stays", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-07-01T10:00:00Z"))
      const log = join(tmpdir(), `foundry-timers-${randomUUID()}.log`)
      const server = yield* startServer(yield* tempProject(durableProject(log, "", { timers: true })), { model: plannedModel })
      const armed = (yield* askOn(server.url)("acme", [
        { name: "foundry_sleep", arguments: { for: "30 minutes", message: plan({}) } },
        { name: "foundry_schedule", arguments: { every: "1 day", message: plan({}) } }
      ])).replace(/^done: /, "").split(" | ").map((result) => /"id":"(agent:[^"]+)"/.exec(result)?.[1])
      const [sleep, daily] = armed
      expect(sleep).toBeDefined()
      expect(daily).toBeDefined()
      yield* TestClock.adjust("1 hour")
      yield* until(server.url, (all) => all.some((r) => r.source?.schedule === sleep && r.status === "completed"))
      // Fired, it is still shown for a while, saying why it fires no more.
      const listed = (yield* http(`${server.url}/api/schedules`)).json as Array<{ id: string; status: string; reason: string | null }>
      expect(listed.find((s) => s.id === sleep)).toMatchObject({ status: "done", reason: expect.stringContaining("has come") })

      // A day after it fired, with its instance's daily timer firing meanwhile.
      yield* TestClock.adjust("25 hours")
      const stored = () => {
        const db = new Database(server.storeFile, { readonly: true })
        const ids = db.prepare("SELECT id FROM foundry_activations WHERE kind = 'agent' ORDER BY id").all()
        db.close()
        return ids
      }
      for (let attempt = 0; attempt < 100 && stored().length > 1; attempt++) yield* realSleep(20)
      expect(stored()).toEqual([{ id: daily }])
      expect(yield* agentTimerIds(server.url)).toEqual([daily])
    }))

  it.scoped("a sleeping conversation is re-armed from the store after a restart and wakes once", () =>
    Effect.gen(function*() {
      const { conversationId, root, storeFile } = yield* sleptHalfAnHour
      const server = yield* startServer(root, { model: plannedModel, storeFile })
      yield* TestClock.adjust("1 hour")
      yield* realSleep(100)
      yield* TestClock.adjust("1 hour")
      const all = yield* until(server.url, (all) => all.some((r) => r.source !== undefined && r.status === "completed"))
      const wakes = all.filter((r) => r.source !== undefined)
      expect(wakes).toHaveLength(1)
      expect(wakes[0]).toMatchObject({ conversationId, source: { scheduledFor: "2026-07-01T10:30:00.000Z" } })
    }))

  it.scoped("a sleep that comes due while its agent is not in the build waits for it, and wakes it once it is back", () =>
    Effect.gen(function*() {
      const { conversationId, root, storeFile } = yield* sleptHalfAnHour
      // A build without the worker (its folder renamed, say) while the sleep comes due.
      yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* startServer(yield* tempProject({ "agents/other/agent.ts": agentFile() }), { model: plannedModel, storeFile })
        yield* TestClock.adjust("1 hour")
        yield* realSleep(150)
        const timers = (yield* http(`${server.url}/api/schedules`)).json as Array<{ readonly id: string; readonly status: string }>
        expect(timers.filter((timer) => timer.id.startsWith("agent:")).map((timer) => timer.status)).toEqual(["active"])
        expect((yield* runs(server.url)).filter((r) => r.source !== undefined)).toEqual([])
      }))
      const server = yield* startServer(root, { model: plannedModel, storeFile })
      yield* TestClock.adjust("1 minute")
      const all = yield* until(server.url, (all) => all.some((r) => r.source !== undefined && r.status === "completed"))
      const wakes = all.filter((r) => r.source !== undefined)
      expect(wakes).toHaveLength(1)
      expect(wakes[0]).toMatchObject({ conversationId, status: "completed" })
    }))

  it.scoped("an agent has no timer tools unless it opts in; a list offers only those", () =>
    Effect.gen(function*() {
      const offered = new Map<string, ReadonlyArray<string>>()
      // Without instructions, an agent's system prompt is its description: it tells the agents apart.
      const model = Scripted.make((request) => {
        offered.set(request.system, request.tools.map((t) => t.name))
        return { text: "ok" }
      })
      const agent = (description: string, timers: string) =>
        `import { defineAgent } from "foundry"\nexport default defineAgent({ description: ${JSON.stringify(description)}${timers} })\n`
      const server = yield* startServer(
        yield* tempProject({
          "agents/plain/agent.ts": agent("plain", ""),
          "agents/sleeper/agent.ts": agent("sleeper", `, timers: ["sleep"]`),
          "agents/keeper/agent.ts": agent("keeper", ", timers: true")
        }),
        { model }
      )
      for (const name of ["plain", "sleeper", "keeper"]) {
        const created = (yield* http(`${server.url}/api/runs`, { body: { agent: name, message: "hi" } })).json as { runId: string }
        yield* until(server.url, (all) => all.some((r) => r.id === created.runId && r.status === "completed"))
      }
      expect(offered.get("plain")).toEqual([])
      expect(offered.get("sleeper")).toEqual(["foundry_sleep"])
      expect(offered.get("keeper")).toEqual(["foundry_schedule", "foundry_schedules", "foundry_sleep"])
    }))

  it.scoped("a timer that would fire more often than timers.minInterval is refused, naming the limit", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-07-01T10:00:00Z"))
      const log = join(tmpdir(), `foundry-timers-${randomUUID()}.log`)
      const server = yield* startServer(yield* tempProject(durableProject(log, "", { timers: true })), { model: plannedModel })
      const results = (yield* askOn(server.url)("acme", [
        schedule({ every: "30 seconds" }),
        schedule({ cron: "*/10 * * * * *" }),
        schedule({ every: "1 minute" })
      ])).replace(/^done: /, "").split(" | ")
      expect(results[0]).toContain("refused: this timer would fire every 30s")
      expect(results[0]).toContain("timers.minInterval: 1 minute")
      expect(results[1]).toContain("refused: this timer would fire every 10s")
      expect(results[2]).toMatch(/^\{"id":"agent:tmr_/)
      expect(yield* agentTimerIds(server.url)).toHaveLength(1)
      // A time that has passed is named, with the time it is now.
      const past = (yield* askOn(server.url)("acme", [schedule({ at: "2026-06-30T10:00:00Z" })])).replace(/^done: /, "")
      expect(past).toContain("2026-06-30T10:00:00Z is in the past (it is 2026-07-01T10:00:00.000Z now): give a time after now")
    }))

  it.scoped("timers.minInterval comes from the config", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-07-01T10:00:00Z"))
      const log = join(tmpdir(), `foundry-timers-${randomUUID()}.log`)
      const project = durableProject(log, `{ timers: { minInterval: "2 hours" } }`, { timers: true })
      const server = yield* startServer(yield* tempProject(project), { model: plannedModel })
      const results = (yield* askOn(server.url)("acme", [schedule({ cron: "0 * * * *" }), schedule({ every: "2 hours" })]))
        .replace(/^done: /, "").split(" | ")
      expect(results[0]).toContain("refused: this timer would fire every 1h")
      expect(results[0]).toContain("timers.minInterval: 2 hours")
      expect(results[1]).toMatch(/^\{"id":"agent:tmr_/)
    }))

  it.scoped("an instance with timers.maxPendingPerInstance active timers may not arm or resume another", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-07-01T10:00:00Z"))
      const log = join(tmpdir(), `foundry-timers-${randomUUID()}.log`)
      const project = durableProject(log, `{ timers: { maxPendingPerInstance: 2 } }`, { timers: true })
      const server = yield* startServer(yield* tempProject(project), { model: plannedModel })
      const ask = askOn(server.url)
      const results = (yield* ask("alpha", [
        schedule({ in: "1 hour" }),
        schedule({ every: "1 day" }),
        { name: "foundry_sleep", arguments: { for: "1 hour", message: "wake" } }
      ])).replace(/^done: /, "").split(" | ")
      expect(results[0]).toMatch(/^\{"id":"agent:tmr_/)
      expect(results[1]).toMatch(/^\{"id":"agent:tmr_/)
      expect(results[2]).toContain("refused: this instance already has 2 active timers")
      expect(results[2]).toContain("timers.maxPendingPerInstance: 2")
      // The limit is per instance.
      expect(yield* ask("beta", [schedule({ in: "1 hour" })])).toMatch(/^done: \{"id":"agent:tmr_/)
      // A paused timer is not pending, but resuming it would be a way around the limit.
      const first = /"id":"(agent:[^"]+)"/.exec(results[0] ?? "")?.[1]
      expect(yield* ask("alpha", [{ name: "foundry_schedules", arguments: { action: "pause", id: first } }])).toContain(`"status":"paused"`)
      expect(yield* ask("alpha", [schedule({ in: "2 hours" })])).toMatch(/^done: \{"id":"agent:tmr_/)
      expect(yield* ask("alpha", [{ name: "foundry_schedules", arguments: { action: "resume", id: first } }]))
        .toContain("refused: this instance already has 2 active timers")
    }))
})
