import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect } from "effect"
import { type CliProcess, serveProject } from "../support/cli.js"
import { durableProject, plan, slowMarkerOf } from "../support/durableProject.js"
import { http, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const lines = (log: string) => existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").filter((l) => l !== "") : []

interface EventBody {
  readonly type: string
  readonly data: Record<string, unknown>
}

const eventsOf = (url: string, runId: string) =>
  Effect.map(http(`${url}/api/runs/${runId}/events`), (r) => r.json as ReadonlyArray<EventBody>)

/** Polls until `check` holds for the run's events. */
const waitForEvents = (url: string, runId: string, check: (events: ReadonlyArray<EventBody>) => boolean) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 400; attempt++) {
      if (check(yield* eventsOf(url, runId))) return
      yield* Effect.sleep("25 millis")
    }
    return yield* Effect.die(new Error(`run ${runId} never reached the expected point: ${JSON.stringify((yield* eventsOf(url, runId)).map((e) => e.type))}`))
  })


/** Kills the server's process with SIGKILL and waits until it has exited. */
const killHard = (server: CliProcess) =>
  Effect.async<void>((resume) => {
    server.child.once("exit", () => resume(Effect.void))
    server.child.kill("SIGKILL")
  })

const submit = (url: string, message: string) =>
  Effect.map(http(`${url}/api/runs`, { body: { agent: "worker", message } }), (r) => r.json as { runId: string })

describe("crash recovery", () => {
  it.scopedLive("runs killed with SIGKILL at every point finish after a restart; no recorded call runs twice", () =>
    Effect.gen(function*() {
      const log = join(tmpdir(), `foundry-crash-${randomUUID()}.log`)
      const root = yield* tempProject(durableProject(log, "", { plannedModelInFile: true }))
      writeFileSync(slowMarkerOf(log), "")
      const first = yield* serveProject(root)

      // 1. killed during a model turn
      const inTurn = yield* submit(first.url, plan({ delay: 60_000, calls: [{ name: "record", arguments: { line: "turn" } }] }))
      // 2. killed between a tool's start and its record (the tool keys its side effect by idempotency key)
      const inTool = yield* submit(first.url, plan({ calls: [{ name: "charge", arguments: { id: "card-7", ms: 60_000 } }] }))
      // 3. killed after a tool's result was recorded, during the next model turn
      const afterTool = yield* submit(first.url, plan({ finalDelay: 60_000, calls: [{ name: "record", arguments: { line: "after" } }] }))
      // 4. killed while suspended on an approval
      const suspended = yield* submit(first.url, plan({ calls: [{ name: "transfer", arguments: { amount: 5 } }] }))
      // 5. a parent waiting on a subagent's child run, killed during the child's model turn
      const parent = yield* Effect.map(
        http(`${first.url}/api/runs`, {
          body: {
            agent: "lead",
            message: plan({
              calls: [{
                name: "ask-worker",
                arguments: { message: plan({ delay: 60_000, calls: [{ name: "record", arguments: { line: "child" } }] }) }
              }]
            })
          }
        }),
        (r) => r.json as { runId: string }
      )

      yield* waitForEvents(first.url, inTurn.runId, (e) => e.some((x) => x.type === "model.turn.started"))
      yield* waitForEvents(first.url, parent.runId, (e) => e.some((x) => x.type === "run.suspended"))
      yield* waitForEvents(first.url, inTool.runId, (e) => e.some((x) => x.type === "tool.call.started"))
      yield* waitForEvents(first.url, afterTool.runId, (e) => e.filter((x) => x.type === "model.turn.started").length === 2)
      yield* waitForEvents(first.url, suspended.runId, (e) => e.some((x) => x.type === "run.suspended"))
      expect(lines(log).sort()).toEqual([`${afterTool.runId} call_1_1 after`, "charge-card-7"].sort())
      yield* killHard(first.server)

      // The second process's model answers at once: recovery, not the delays, is under test.
      rmSync(slowMarkerOf(log))
      const restarted = Date.now()
      const second = yield* serveProject(root)
      const approvals = yield* http(`${second.url}/api/approvals?status=pending`)
      const approval = (approvals.json as Array<{ id: string; runId: string }>).find((a) => a.runId === suspended.runId)
      expect(approval).toBeDefined()
      yield* http(`${second.url}/api/approvals/${approval!.id}`, { body: { decision: "approve" } })

      for (const run of [inTurn, inTool, afterTool, suspended, parent]) {
        const done = yield* waitForRun(second.url, run.runId)
        expect(done.status).toBe("completed")
      }
      // DESIGN section 9: in-flight runs finish within 5 s of the restart (process start included).
      expect(Date.now() - restarted).toBeLessThan(15_000)
      const effects = lines(log)
      expect(effects.filter((l) => l.endsWith(" turn"))).toHaveLength(1)
      expect(effects.filter((l) => l === "charge-card-7")).toHaveLength(1)
      expect(effects.filter((l) => l.endsWith(" after"))).toHaveLength(1)
      expect(effects.filter((l) => l.endsWith(" transfer 5"))).toHaveLength(1)
      expect(effects.filter((l) => l.endsWith(" child"))).toHaveLength(1)
      expect((yield* waitForRun(second.url, parent.runId)).output).toBe("done: done: recorded child")

      // The recorded model turn of run 3 was not asked again; run 2's unrecorded call ran again.
      const afterEvents = yield* eventsOf(second.url, afterTool.runId)
      expect(afterEvents.filter((e) => e.type === "tool.call.started")).toHaveLength(1)
      const toolEvents = yield* eventsOf(second.url, inTool.runId)
      expect(toolEvents.filter((e) => e.type === "tool.call.started")).toHaveLength(2)
      expect(toolEvents.map((e) => e.type)).toContain("run.resumed")
    }), { timeout: 120_000 })
})

describe("takeover after a crash", () => {
  it.scopedLive("a process restarted on the same host takes over a killed process's leases at once, not when they expire", () =>
    Effect.gen(function*() {
      const log = join(tmpdir(), `foundry-takeover-${randomUUID()}.log`)
      // Leases that would outlive the test: only a takeover lets the run finish in time.
      const root = yield* tempProject(durableProject(log, `{ leaseTtl: "10 minutes" }`, { plannedModelInFile: true }))
      writeFileSync(slowMarkerOf(log), "")
      const first = yield* serveProject(root)
      const held = yield* submit(first.url, plan({ delay: 60_000, calls: [{ name: "record", arguments: { line: "held" } }] }))
      yield* waitForEvents(first.url, held.runId, (e) => e.some((x) => x.type === "model.turn.started"))
      yield* killHard(first.server)
      rmSync(slowMarkerOf(log))
      const second = yield* serveProject(root)
      const done = yield* waitForRun(second.url, held.runId)
      expect(done.status).toBe("completed")
      expect(lines(log).filter((l) => l.endsWith(" held"))).toHaveLength(1)
    }), { timeout: 60_000 })
})

describe("a decision the process died before acting on", () => {
  it.scopedLive("a run whose approval was decided, its process killed before it resumed the run, resumes after a restart", () =>
    Effect.gen(function*() {
      const log = join(tmpdir(), `foundry-decided-${randomUUID()}.log`)
      const root = yield* tempProject(durableProject(log, "", { plannedModelInFile: true }))
      const first = yield* serveProject(root)
      const suspended = yield* submit(first.url, plan({ calls: [{ name: "transfer", arguments: { amount: 7 } }] }))
      yield* waitForEvents(first.url, suspended.runId, (e) => e.some((x) => x.type === "run.suspended"))
      yield* killHard(first.server)
      // The decision's transaction committed; the process died before resuming the run.
      const database = new Database(join(root, ".foundry/foundry.db"))
      const decided = database.prepare("UPDATE foundry_approvals SET status = 'approved', decided_at = ? WHERE run_id = ? AND status = 'pending'")
        .run(Date.now(), suspended.runId)
      database.close()
      expect(decided.changes).toBe(1)

      const second = yield* serveProject(root)
      const done = yield* waitForRun(second.url, suspended.runId)
      expect(done.status).toBe("completed")
      expect(lines(log).filter((l) => l.endsWith(" transfer 7"))).toHaveLength(1)
    }), { timeout: 60_000 })
})

describe("order after a restart", () => {
  it.scopedLive("a run interrupted by a crash executes before a schedule's firing that the restart sends to its conversation", () =>
    Effect.gen(function*() {
      const log = join(tmpdir(), `foundry-order-${randomUUID()}.log`)
      const root = yield* tempProject({
        ...durableProject(log, "", { plannedModelInFile: true }),
        "schedules/tick.ts": `import { defineSchedule } from "foundry"
import worker from "../agents/worker/agent.js"
export default defineSchedule({
  agent: worker,
  every: "2 seconds",
  overlap: "queue",
  message: ${JSON.stringify(plan({ calls: [{ name: "charge", arguments: { id: "tick", ms: 60_000 } }] }))}
})
`
      })
      writeFileSync(slowMarkerOf(log), "")
      const first = yield* serveProject(root)
      let interrupted: { id: string; conversationId: string } | undefined
      for (let attempt = 0; attempt < 400 && interrupted === undefined; attempt++) {
        const runs = (yield* http(`${first.url}/api/runs?agent=worker`)).json as ReadonlyArray<{ id: string; conversationId: string; status: string }>
        interrupted = runs.find((run) => run.status === "running")
        if (interrupted === undefined) yield* Effect.sleep("25 millis")
      }
      yield* waitForEvents(first.url, interrupted!.id, (e) => e.some((x) => x.type === "tool.call.started"))
      yield* killHard(first.server)
      rmSync(slowMarkerOf(log))
      // A firing missed while no server ran: the restart fires it at once, into the same conversation.
      yield* Effect.sleep("2500 millis")
      const second = yield* serveProject(root)
      const resumed = yield* waitForRun(second.url, interrupted!.id)
      expect(resumed.status).toBe("completed")
      const runs = (yield* http(`${second.url}/api/runs?agent=worker`)).json as ReadonlyArray<{ id: string; conversationId: string; startedAt: number | null }>
      const later = runs.filter((run) => run.conversationId === interrupted!.conversationId && run.id !== interrupted!.id)
      expect(later.length).toBeGreaterThan(0)
      for (const run of later) {
        const done = yield* waitForRun(second.url, run.id)
        expect(done.status).toBe("completed")
        expect(Number(done.startedAt)).toBeGreaterThanOrEqual(Number(resumed.finishedAt))
      }
      // The conversation's transcript keeps each run's messages together: the interrupted run's
      // call and its result are not split by a later run's.
      const messages = (yield* http(`${second.url}/api/conversations/${interrupted!.conversationId}/messages`)).json as ReadonlyArray<{ runId: string }>
      const firstOther = messages.findIndex((m) => m.runId !== interrupted!.id)
      expect(messages.slice(firstOther).some((m) => m.runId === interrupted!.id)).toBe(false)
    }), { timeout: 90_000 })
})

describe("two processes on one database", () => {
  it.scopedLive("never run one conversation at the same time", () =>
    Effect.gen(function*() {
      const log = join(tmpdir(), `foundry-lease-${randomUUID()}.log`)
      const root = yield* tempProject(durableProject(log, "", { plannedModelInFile: true }))
      const [a, b] = yield* Effect.all([serveProject(root), serveProject(root)], { concurrency: 2 })
      const work = plan({ calls: [{ name: "slow", arguments: { ms: 250 } }] })
      const first = yield* Effect.map(
        http(`${a.url}/api/runs`, { body: { agent: "worker", message: work } }),
        (r) => r.json as { runId: string; conversationId: string }
      )
      const others = yield* Effect.forEach([b, a, b, a], (server) =>
        Effect.map(
          http(`${server.url}/api/runs`, { body: { agent: "worker", message: work, conversation: first.conversationId } }),
          (r) => r.json as { runId: string }
        ), { concurrency: "unbounded" })
      const ids = [first.runId, ...others.map((o) => o.runId)]
      // The whole run on failure, so a flake shows its error.
      for (const id of ids) expect(yield* waitForRun(a.url, id)).toMatchObject({ status: "completed" })
      const spans = ids.map((id) => {
        const mine = lines(log).filter((l) => l.startsWith(`${id} `))
        expect(mine).toHaveLength(2)
        return { start: Number(mine[0]?.split(" ")[2]), end: Number(mine[1]?.split(" ")[2]) }
      }).sort((x, y) => x.start - y.start)
      for (let i = 1; i < spans.length; i++) expect(spans[i]!.start).toBeGreaterThanOrEqual(spans[i - 1]!.end)
    }), { timeout: 120_000 })
})
