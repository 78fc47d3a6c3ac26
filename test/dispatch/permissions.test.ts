/**
 * Permission rules in the config (allow / ask / deny by agent and tool pattern, first match wins)
 * and approvals granted for a whole conversation, which survive a restart.
 */
import { existsSync, readFileSync } from "node:fs"
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { durableProject, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const newLog = () => join(tmpdir(), `foundry-log-${randomUUID()}.log`)
const lines = (log: string) => existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").filter((l) => l !== "") : []

interface Created {
  readonly runId: string
  readonly conversationId: string
}

interface Event {
  readonly type: string
  readonly data: Record<string, unknown>
}

const submit = (url: string, body: Record<string, unknown>) =>
  Effect.map(http(`${url}/api/runs`, { body: { agent: "worker", ...body } }), (r) => {
    expect(r.status).toBe(202)
    return r.json as Created
  })

const setup = (config = "") =>
  Effect.gen(function*() {
    const log = newLog()
    const root = yield* tempProject(durableProject(log, config))
    const server = yield* startServer(root, { model: plannedModel })
    return { log, url: server.url }
  })

const eventsOf = (url: string, runId: string) =>
  Effect.map(http(`${url}/api/runs/${runId}/events`), (r) => r.json as ReadonlyArray<Event>)

/** Waits until the run is suspended or has ended; returns its status. */
const settled = (url: string, runId: string) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 400; attempt++) {
      const status = ((yield* http(`${url}/api/runs/${runId}`)).json as { status: string }).status
      if (status === "suspended" || status === "completed" || status === "failed") return status
      yield* Effect.sleep("25 millis")
    }
    return yield* Effect.die(new Error(`run ${runId} never settled`))
  })

/** The run's pending approval, once it is suspended on one. */
const pendingApproval = (url: string, runId: string, tool: string) =>
  Effect.gen(function*() {
    expect(yield* settled(url, runId)).toBe("suspended")
    const pending = (yield* http(`${url}/api/approvals?status=pending`)).json as Array<{ id: string; runId: string; tool: string }>
    const approval = pending.find((a) => a.runId === runId)
    expect(approval?.tool).toBe(tool)
    return approval!.id
  })

const transfer = (amount: number) => plan({ calls: [{ name: "transfer", arguments: { amount } }] })
const record = (line: string) => plan({ calls: [{ name: "record", arguments: { line } }] })

describe("permission rules", () => {
  it.scopedLive("a deny rule by pattern answers the model with its reason, and the tool never runs", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup(`{ permissions: [{ agent: "work*", tool: "rec*", action: "deny", reason: "no logging today" }] }`)
      const run = yield* submit(url, { message: record("secret") })
      const done = yield* waitForRun(url, run.runId)
      expect(done).toMatchObject({ status: "completed", output: "done: Error: denied by the project's permission rules: no logging today" })
      expect(lines(log)).toEqual([])
      const events = yield* eventsOf(url, run.runId)
      expect(events.find((e) => e.type === "tool.call.failed")?.data).toMatchObject({
        tool: "record",
        error: "denied by the project's permission rules: no logging today"
      })
      expect(events.map((e) => e.type)).not.toContain("tool.call.started")
      expect(events.map((e) => e.type)).not.toContain("approval.requested")
    }))

  it.scopedLive("a deny rule covers subagent calls and the built-in timer tools: no child run starts, no timer is armed", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(durableProject(newLog(), `{ permissions: [
        { tool: "ask-worker", action: "deny", reason: "no delegation" },
        { tool: "foundry_*", action: "deny", reason: "no timers" }
      ] }`, { timers: true }))
      const { url } = yield* startServer(root, { model: plannedModel })
      const delegated = plan({ calls: [{ name: "ask-worker", arguments: { message: record("delegated") } }] })
      const lead = yield* Effect.map(http(`${url}/api/runs`, { body: { agent: "lead", message: delegated } }), (r) => r.json as Created)
      expect(yield* waitForRun(url, lead.runId)).toMatchObject({
        status: "completed",
        output: "done: Error: denied by the project's permission rules: no delegation"
      })
      expect((yield* http(`${url}/api/runs?agent=worker`)).json).toEqual([])
      const later = yield* submit(url, { message: plan({ calls: [{ name: "foundry_schedule", arguments: { message: "later", in: "1 hour" } }] }) })
      expect(yield* waitForRun(url, later.runId)).toMatchObject({
        status: "completed",
        output: "done: Error: denied by the project's permission rules: no timers"
      })
      expect((yield* http(`${url}/api/schedules`)).json).toEqual([])
    }))

  it.scopedLive("a deny rule wins over the tool's own approval: nobody is asked", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup(`{ permissions: [{ tool: "transfer", action: "deny", reason: "transfers are off" }] }`)
      const run = yield* submit(url, { message: transfer(250) })
      expect(yield* waitForRun(url, run.runId)).toMatchObject({ status: "completed", output: "done: Error: denied by the project's permission rules: transfers are off" })
      expect(lines(log)).toEqual([])
      expect((yield* http(`${url}/api/approvals`)).json).toEqual([])
    }))

  it.scopedLive("an ask rule makes a tool without an approval policy wait for a person", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup(`{ permissions: [{ tool: "record", action: "ask" }] }`)
      const run = yield* submit(url, { message: record("checked") })
      const approvalId = yield* pendingApproval(url, run.runId, "record")
      expect(lines(log)).toEqual([])
      yield* http(`${url}/api/approvals/${approvalId}`, { body: { decision: "approve" } })
      expect(yield* waitForRun(url, run.runId)).toMatchObject({ status: "completed", output: "done: recorded checked" })
      expect(lines(log)).toHaveLength(1)
    }))

  it.scopedLive("an allow rule runs an always-approve tool without asking", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup(`{ permissions: [{ agent: "worker", tool: "trans*", action: "allow" }] }`)
      const run = yield* submit(url, { message: transfer(10) })
      expect(yield* waitForRun(url, run.runId)).toMatchObject({ status: "completed", output: "done: transferred 10" })
      expect(lines(log)).toEqual([`${run.runId} transfer 10`])
      expect((yield* eventsOf(url, run.runId)).map((e) => e.type)).not.toContain("approval.requested")
    }))

  it.scopedLive("the first matching rule wins", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup(`{ permissions: [
        { tool: "transfer", action: "allow" },
        { tool: "*", action: "deny", reason: "everything else is off" }
      ] }`)
      const allowed = yield* submit(url, { message: transfer(5) })
      expect(yield* waitForRun(url, allowed.runId)).toMatchObject({ status: "completed", output: "done: transferred 5" })
      const denied = yield* submit(url, { message: record("x") })
      expect(yield* waitForRun(url, denied.runId)).toMatchObject({ output: "done: Error: denied by the project's permission rules: everything else is off" })
      expect(lines(log)).toEqual([`${allowed.runId} transfer 5`])
    }))

  it.scopedLive("rules for another agent do not apply", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup(`{ permissions: [{ agent: "lead", tool: "*", action: "deny" }] }`)
      const run = yield* submit(url, { message: record("mine") })
      expect(yield* waitForRun(url, run.runId)).toMatchObject({ status: "completed", output: "done: recorded mine" })
      expect(lines(log)).toHaveLength(1)
    }))
})

describe("approvals of runs that end without them", () => {
  it.scopedLive("cancelling or steering a run that waits on an approval expires it: a later decision gets 409 and nothing runs", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup()
      for (const end of ["cancel", "steer"] as const) {
        const run = yield* submit(url, { message: transfer(100) })
        const approvalId = yield* pendingApproval(url, run.runId, "transfer")
        const ended = yield* http(`${url}/api/runs/${run.runId}/${end}`, end === "steer" ? { body: { message: record("instead") } } : { method: "POST" })
        expect(ended.status).toBe(end === "steer" ? 202 : 200)
        const approvals = (yield* http(`${url}/api/approvals`)).json as Array<{ id: string; status: string; reason: string }>
        expect(approvals.find((a) => a.id === approvalId)).toMatchObject({ status: "expired", reason: "the run was cancelled before a decision" })
        const late = yield* http(`${url}/api/approvals/${approvalId}`, { body: { decision: "approve" } })
        expect(late.status).toBe(409)
        // Closed before the run's end: a follower's stream ends with `run.cancelled`.
        expect((yield* eventsOf(url, run.runId)).map((e) => e.type).slice(-3)).toEqual(["approval.decided", "tool.call.failed", "run.cancelled"])
      }
      expect(lines(log).filter((line) => line.includes(" transfer "))).toEqual([])
    }))
})

describe("conversation grants", () => {
  it.scopedLive("approved for the conversation, the next transfer there runs without asking; a new conversation still asks", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup()
      const first = yield* submit(url, { message: transfer(1) })
      const approvalId = yield* pendingApproval(url, first.runId, "transfer")
      const decided = yield* http(`${url}/api/approvals/${approvalId}`, { body: { decision: "approve", scope: "conversation" } })
      expect(decided.status).toBe(200)
      // The approval says what it approved: the tool for the rest of the conversation, listed so too.
      expect(decided.json).toMatchObject({ status: "approved", scope: "conversation" })
      expect((yield* http(`${url}/api/approvals?run=${first.runId}`)).json).toMatchObject([{ id: approvalId, scope: "conversation" }])
      expect(yield* waitForRun(url, first.runId)).toMatchObject({ status: "completed", output: "done: transferred 1" })
      expect((yield* eventsOf(url, first.runId)).find((e) => e.type === "approval.decided")?.data).toMatchObject({
        approvalId,
        status: "approved",
        scope: "conversation"
      })

      const second = yield* submit(url, { conversation: first.conversationId, message: transfer(2) })
      expect(yield* waitForRun(url, second.runId)).toMatchObject({ status: "completed", output: "done: transferred 2" })
      const events = yield* eventsOf(url, second.runId)
      expect(events.map((e) => e.type)).not.toContain("approval.requested")
      expect(events.find((e) => e.type === "approval.decided")?.data).toMatchObject({ tool: "transfer", status: "approved", grantedBy: approvalId })

      const elsewhere = yield* submit(url, { message: transfer(3) })
      yield* pendingApproval(url, elsewhere.runId, "transfer")
      expect(lines(log)).toEqual([`${first.runId} transfer 1`, `${second.runId} transfer 2`])
    }))

  it.scopedLive("scope conversation goes only with approve", () =>
    Effect.gen(function*() {
      const { url } = yield* setup()
      const run = yield* submit(url, { message: transfer(1) })
      const approvalId = yield* pendingApproval(url, run.runId, "transfer")
      const refused = yield* http(`${url}/api/approvals/${approvalId}`, { body: { decision: "deny", scope: "conversation" } })
      expect(refused.status).toBe(400)
      expect(yield* settled(url, run.runId)).toBe("suspended")
    }))

  it.live("a conversation grant survives a restart", () =>
    Effect.gen(function*() {
      const log = newLog()
      const storeFile = join(tmpdir(), `foundry-store-${randomUUID()}.db`)
      const files = durableProject(log)
      const first = yield* Effect.scoped(Effect.gen(function*() {
        const project = yield* tempProject(files)
        const server = yield* startServer(project, { model: plannedModel, storeFile })
        const run = yield* submit(server.url, { message: transfer(1) })
        const approvalId = yield* pendingApproval(server.url, run.runId, "transfer")
        yield* http(`${server.url}/api/approvals/${approvalId}`, { body: { decision: "approve", scope: "conversation" } })
        expect(yield* waitForRun(server.url, run.runId)).toMatchObject({ status: "completed" })
        return run
      }))
      yield* Effect.scoped(Effect.gen(function*() {
        const project = yield* tempProject(files)
        const server = yield* startServer(project, { model: plannedModel, storeFile })
        const again = yield* submit(server.url, { conversation: first.conversationId, message: transfer(2) })
        expect(yield* waitForRun(server.url, again.runId)).toMatchObject({ status: "completed", output: "done: transferred 2" })
        expect(lines(log)).toEqual([`${first.runId} transfer 1`, `${again.runId} transfer 2`])
      }))
    }))

  it.live("a deny rule added later wins over a conversation grant", () =>
    Effect.gen(function*() {
      const log = newLog()
      const storeFile = join(tmpdir(), `foundry-store-${randomUUID()}.db`)
      const first = yield* Effect.scoped(Effect.gen(function*() {
        const project = yield* tempProject(durableProject(log))
        const server = yield* startServer(project, { model: plannedModel, storeFile })
        const run = yield* submit(server.url, { message: transfer(1) })
        const approvalId = yield* pendingApproval(server.url, run.runId, "transfer")
        yield* http(`${server.url}/api/approvals/${approvalId}`, { body: { decision: "approve", scope: "conversation" } })
        expect(yield* waitForRun(server.url, run.runId)).toMatchObject({ status: "completed" })
        return run
      }))
      yield* Effect.scoped(Effect.gen(function*() {
        const project = yield* tempProject(durableProject(log, `{ permissions: [{ tool: "transfer", action: "deny", reason: "frozen" }] }`))
        const server = yield* startServer(project, { model: plannedModel, storeFile })
        const again = yield* submit(server.url, { conversation: first.conversationId, message: transfer(2) })
        expect(yield* waitForRun(server.url, again.runId)).toMatchObject({ output: "done: Error: denied by the project's permission rules: frozen" })
        expect(lines(log)).toEqual([`${first.runId} transfer 1`])
      }))
    }))
})
