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
import { Deferred, Effect, Fiber, Schema } from "effect"
import { ChatMessage } from "../../src/models/Model.js"
import { durableProject, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { connect, freshDatabase, skipPostgres } from "../support/postgres.js"
import { http, runIdOf, startServer, startServerOnItsStore } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const lines = (log: string) => existsSync(log) ? readFileSync(log, "utf8").split("\n").filter((l) => l !== "") : []

const decodeMessage = Schema.decodeUnknownSync(Schema.parseJson(ChatMessage))

/** Waits until `check` holds (looked at every 10 ms, for 5 s at most; the test dies saying `what` never came). */
const until = (what: string, check: Effect.Effect<boolean, unknown>) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 500; attempt++) {
      if (yield* check) return
      yield* Effect.sleep("10 millis")
    }
    return yield* Effect.dieMessage(`never: ${what}`)
  })

/** How many of the database's sessions wait for a lock. */
const waitingForLocks = (sql: Effect.Effect.Success<ReturnType<typeof connect>>) =>
  Effect.map(
    sql<{ readonly waiting: number }>`SELECT COUNT(*)::int AS waiting FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    (rows) => rows[0]?.waiting ?? 0
  )

/** Whether the slow tool logged `what` (start, end) for run `runId` in `log`. */
const logged = (log: string, runId: string, what: string) => Effect.sync(() => lines(log).some((line) => line.startsWith(`${runId} ${what} `)))

describe.skipIf(skipPostgres)("a cancel from another process on PostgreSQL", () => {
  it.scopedLive("closes the transcript as stored after a step its executor was committing: each call answered once, none left open", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabase
      const log = join(tmpdir(), `foundry-log-${randomUUID()}.log`)
      const root = yield* tempProject(durableProject(log, `{ store: { postgres: ${JSON.stringify(url)} } }`))
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
      const release = yield* Deferred.make<void>()
      const holding = yield* sql.withTransaction(
        Effect.zipRight(sql`SELECT id FROM foundry_runs WHERE id = ${runId} FOR UPDATE`, Deferred.await(release))
      ).pipe(Effect.fork)
      yield* until("the first call ended", logged(log, runId, "end"))
      yield* until("the executor's step waits", Effect.map(waitingForLocks(sql), (waiting) => waiting >= 1))

      // The cancel, from the other server, while that step waits; then the step goes on.
      const cancel = yield* http(`${other}/api/runs/${runId}/cancel`, { method: "POST" }).pipe(Effect.fork)
      yield* Effect.sleep("300 millis")
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holding)
      const cancelled = yield* Fiber.join(cancel)
      expect(cancelled.status).toBe(200)
      expect(cancelled.json).toMatchObject({ id: runId, status: "cancelled" })

      const messages = (yield* sql<{ readonly body: string }>`SELECT body FROM foundry_messages WHERE run_id = ${runId} ORDER BY seq`)
        .map((row) => decodeMessage(row.body))
      const calls = messages.flatMap((message) => message._tag === "assistant" ? message.toolCalls.map((call) => call.id) : [])
      const answers = messages.flatMap((message) => message._tag === "tool" ? [message.toolCallId] : [])
      // Whichever of the two came first, each call is answered once: by its result, or by the
      // cancel, never by both; none is left open.
      expect(answers.toSorted()).toEqual(calls.toSorted())
      expect(calls[0]).toBe("call_1_1")
    }), 30_000)

  it.scopedLive("leaves a timer armed only by a call answered with it: the timer goes in with the call's answer, or not at all", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabase
      const log = join(tmpdir(), `foundry-log-${randomUUID()}.log`)
      const root = yield* tempProject(durableProject(log, `{ store: { postgres: ${JSON.stringify(url)} } }`, { timers: true }))
      const executing = yield* startServerOnItsStore(root, plannedModel)
      const other = yield* startServerOnItsStore(root, plannedModel)
      const sql = yield* connect(url)
      // Timers held back: the executor's write of its timer waits while the cancel comes.
      const release = yield* Deferred.make<void>()
      const holding = yield* sql.withTransaction(
        Effect.zipRight(sql`LOCK TABLE foundry_activations IN SHARE MODE`, Deferred.await(release))
      ).pipe(Effect.fork)
      const created = yield* http(`${executing}/api/runs`, {
        body: { agent: "worker", message: plan({ calls: [{ name: "foundry_sleep", arguments: { message: "wake up", for: "1 hour" } }] }) }
      })
      const runId = runIdOf(created.json)
      yield* until("the executor's timer waits", Effect.map(waitingForLocks(sql), (waiting) => waiting >= 1))

      const cancel = yield* http(`${other}/api/runs/${runId}/cancel`, { method: "POST" }).pipe(Effect.fork)
      yield* Effect.sleep("300 millis")
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holding)
      const cancelled = yield* Fiber.join(cancel)
      // Cancelled, or ended already: the executor's step may have gone first and the run on to its end.
      expect([200, 409]).toContain(cancelled.status)
      // The executor gone on as far as it goes (its write after the cancel fenced off).
      yield* Effect.sleep("500 millis")

      const armed = (yield* sql<{ readonly id: string }>`SELECT id FROM foundry_activations WHERE kind = 'agent'`).map((row) => row.id)
      const answers = (yield* sql<{ readonly body: string }>`SELECT body FROM foundry_messages WHERE run_id = ${runId} ORDER BY seq`)
        .map((row) => decodeMessage(row.body))
        .flatMap((message) => message._tag === "tool" ? [message.content] : [])
      expect(answers).toHaveLength(1)
      // Armed exactly when the call's answer names the timer (the tool's answer), none when it
      // says the call was cancelled.
      expect(armed).toEqual(answers[0]?.match(/agent:tmr_[0-9a-f]+/g) ?? [])
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
