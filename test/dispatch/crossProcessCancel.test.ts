/**
 * A cancel from another process on the store, while the run's executor commits a step: the
 * transcript the cancel closes is the one as stored after that step, never before it. Two servers
 * on one PostgreSQL database; the test holds the run's row locked so that the executor's step
 * waits, and sends the cancel while it does.
 */
import { randomUUID } from "node:crypto"
import { existsSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Schema } from "effect"
import { ChatMessage } from "../../src/models/Model.js"
import { durableProject, durableProjectOnPostgres, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { connect, holdLocks, skipPostgres, someoneWaitsForALock } from "../support/postgres.js"
import { http, runIdOf, startServer, startServerOnItsStore, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"
import { until } from "../support/until.js"

const lines = (log: string) => existsSync(log) ? readFileSync(log, "utf8").split("\n").filter((l) => l !== "") : []

const decodeMessage = Schema.decodeUnknownSync(Schema.parseJson(ChatMessage))

/** Run `runId`'s messages as stored, in order. */
const runMessages = (sql: Effect.Effect.Success<ReturnType<typeof connect>>, runId: string) =>
  Effect.map(
    sql<{ readonly body: string }>`SELECT body FROM foundry_messages WHERE run_id = ${runId} ORDER BY seq`,
    (rows) => rows.map((row) => decodeMessage(row.body))
  )

/** Whether the slow tool logged `what` (start, end) for run `runId` in `log`. */
const logged = (log: string, runId: string, what: string) => Effect.sync(() => lines(log).some((line) => line.startsWith(`${runId} ${what} `)))

/**
 * A run whose one call arms a timer, cancelled from a second server while the executor's statement
 * like `waiting` waits for the activations that the test holds locked in `mode`; then the lock let
 * go. What the cancel answered, the timers armed, and the answers stored to the run's calls.
 */
const timerCallCancelled = (mode: "SHARE" | "ACCESS EXCLUSIVE", waiting: string) =>
  Effect.gen(function*() {
    const { root, url } = yield* durableProjectOnPostgres({ timers: true })
    const executing = yield* startServerOnItsStore(root, plannedModel)
    const other = yield* startServerOnItsStore(root, plannedModel)
    const sql = yield* connect(url)
    const release = yield* holdLocks(sql, sql.unsafe(`LOCK TABLE foundry_activations IN ${mode} MODE`))
    const created = yield* http(`${executing}/api/runs`, {
      body: { agent: "worker", message: plan({ calls: [{ name: "foundry_sleep", arguments: { message: "wake up", for: "1 hour" } }] }) }
    })
    const runId = runIdOf(created.json)
    yield* until("the executor waits for the activations", someoneWaitsForALock(sql, waiting))
    const cancel = yield* http(`${other}/api/runs/${runId}/cancel`, { method: "POST" }).pipe(Effect.fork)
    // Given the time to go first where nothing holds it.
    yield* Effect.sleep("300 millis")
    yield* release
    const cancelled = yield* Fiber.join(cancel)
    // The executor gone on as far as it goes (a write after the cancel fenced off, or the run ended).
    yield* waitForRun(executing, runId)
    yield* Effect.sleep("300 millis")
    const armed = (yield* sql<{ readonly id: string }>`SELECT id FROM foundry_activations WHERE kind = 'agent'`).map((row) => row.id)
    const answers = (yield* runMessages(sql, runId)).flatMap((message) => message._tag === "tool" ? [message.content] : [])
    return { cancelled, armed, answers }
  })

describe.skipIf(skipPostgres)("a cancel from another process on PostgreSQL", () => {
  it.scopedLive("closes the transcript as stored after a step its executor was committing: each call answered once, none left open", () =>
    Effect.gen(function*() {
      const { log, root, url } = yield* durableProjectOnPostgres()
      const executing = yield* startServerOnItsStore(root, plannedModel)
      const other = yield* startServerOnItsStore(root, plannedModel)
      const sql = yield* connect(url)
      // Every turn calls the slow tool again: the step after the first call's result holds the
      // next turn's call, and does not end the run.
      const created = yield* http(`${executing}/api/runs`, {
        body: { agent: "worker", message: plan({ calls: [{ name: "slow", arguments: { ms: 300 } }], repeat: true }) }
      })
      const runId = runIdOf(created.json)
      yield* until("the first call started", logged(log, runId, "start"))

      // The run's row held: the executor's next step waits for it, its result not yet stored.
      const release = yield* holdLocks(sql, sql`SELECT id FROM foundry_runs WHERE id = ${runId} FOR UPDATE`)
      yield* until("the first call ended", logged(log, runId, "end"))
      yield* until("the executor's step waits", someoneWaitsForALock(sql))

      // The cancel, from the other server, while that step waits; then the step goes on.
      const cancel = yield* http(`${other}/api/runs/${runId}/cancel`, { method: "POST" }).pipe(Effect.fork)
      yield* Effect.sleep("300 millis")
      yield* release
      const cancelled = yield* Fiber.join(cancel)
      expect(cancelled.status).toBe(200)
      expect(cancelled.json).toMatchObject({ id: runId, status: "cancelled" })

      const messages = yield* runMessages(sql, runId)
      const calls = messages.flatMap((message) => message._tag === "assistant" ? message.toolCalls.map((call) => call.id) : [])
      const answers = messages.flatMap((message) => message._tag === "tool" ? [message.toolCallId] : [])
      // Whichever of the two came first, each call is answered once: by its result, or by the
      // cancel, never by both; none is left open.
      expect(answers.toSorted()).toEqual(calls.toSorted())
      expect(calls[0]).toBe("call_1_1")
    }), 30_000)

  it.scopedLive("a timer goes in with its call's answer: the step that holds both first, the cancel finds the call answered and the timer armed", () =>
    Effect.gen(function*() {
      // The step's insert of the timer held back, with the locks the step took before it.
      const { answers, armed } = yield* timerCallCancelled("SHARE", "%INSERT INTO foundry_activations%")
      expect(answers).toHaveLength(1)
      expect(armed).toHaveLength(1)
      expect(answers[0]).toContain(armed[0])
    }), 30_000)

  it.scopedLive("a timer goes in with its call's answer: the cancel first, the call is answered cancelled and no timer is armed", () =>
    Effect.gen(function*() {
      // The timer call's read of the instance's timers held back, before the call has a step to write.
      const { answers, armed, cancelled } = yield* timerCallCancelled("ACCESS EXCLUSIVE", "%FROM foundry_activations WHERE kind =%")
      expect(cancelled.status).toBe(200)
      expect(answers).toHaveLength(1)
      expect(answers[0]).not.toContain("agent:tmr_")
      expect(armed).toEqual([])
    }), 30_000)
})

describe("cancels from two processes at once", () => {
  it.scopedLive("one ends the run (200), the other finds it ended (409): one run.cancelled, each call answered once", () =>
    Effect.gen(function*() {
      const log = join(tmpdir(), `foundry-log-${randomUUID()}.log`)
      const files = durableProject(log)
      const executing = yield* startServer(yield* tempProject(files), { model: plannedModel })
      const others = yield* Effect.forEach([1, 2], () =>
        Effect.flatMap(tempProject(files), (root) => startServer(root, { model: plannedModel, storeFile: executing.storeFile })))
      const created = yield* http(`${executing.url}/api/runs`, {
        body: { agent: "worker", message: plan({ calls: [{ name: "slow", arguments: { ms: 4000 } }] }) }
      })
      const runId = runIdOf(created.json)
      yield* until("the call started", logged(log, runId, "start"))
      const answers = yield* Effect.forEach(others, (other) => http(`${other.url}/api/runs/${runId}/cancel`, { method: "POST" }), {
        concurrency: "unbounded"
      })
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409])
      expect(answers.find((answer) => answer.status === 409)?.json).toMatchObject({ _tag: "RunAlreadyEnded", status: "cancelled" })
      const events = (yield* http(`${executing.url}/api/runs/${runId}/events`)).json as Array<{ type: string; data: { toolCallId?: string } }>
      expect(events.filter((event) => event.type === "run.cancelled")).toHaveLength(1)
      expect(events.filter((event) => event.type === "tool.call.failed").map((event) => event.data.toolCallId)).toEqual(["call_1_1"])
    }), 20_000)
})
