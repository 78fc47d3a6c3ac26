import { existsSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as Scripted from "../../src/models/scripted.js"
import { durableProject, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { freePort, startCli } from "../support/cli.js"
import { logLines } from "../support/logLines.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { payerFiles, tempProject } from "../support/tempProject.js"

const newLog = () => join(tmpdir(), `foundry-log-${randomUUID()}.log`)
const lines = (log: string) => existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").filter((l) => l !== "") : []

interface Created {
  readonly runId: string
  readonly conversationId: string
}

const submit = (url: string, body: Record<string, unknown>, headers?: Record<string, string>) =>
  Effect.map(http(`${url}/api/runs`, { body: { agent: "worker", ...body }, ...(headers === undefined ? {} : { headers }) }), (r) => {
    expect(r.status).toBe(202)
    return r.json as Created
  })

const setup = (config = "", model = plannedModel) =>
  Effect.gen(function*() {
    const log = newLog()
    const root = yield* tempProject(durableProject(log, config))
    const server = yield* startServer(root, { model })
    return { log, url: server.url, root, storeFile: server.storeFile }
  })

const waitForStatus = (url: string, runId: string, status: string) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 400; attempt++) {
      const run = yield* http(`${url}/api/runs/${runId}`)
      if ((run.json as { status: string }).status === status) return run.json as Record<string, unknown>
      yield* Effect.sleep("25 millis")
    }
    return yield* Effect.die(new Error(`run ${runId} never became ${status}`))
  })

/** A run of a tool call that takes 30 s, once it is running. */
const runningSlowly = (url: string) =>
  Effect.tap(submit(url, { message: plan({ calls: [{ name: "slow", arguments: { ms: 30_000 } }] }) }), (run) => waitForStatus(url, run.runId, "running"))

describe("ordering", () => {
  it.scopedLive("messages sent at once to one conversation are processed one after the other, in order", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup()
      const first = yield* submit(url, { message: plan({ calls: [{ name: "slow", arguments: { ms: 150 } }] }) })
      const rest = yield* Effect.forEach([1, 2], () =>
        submit(url, { conversation: first.conversationId, message: plan({ calls: [{ name: "slow", arguments: { ms: 150 } }] }) }))
      const ids = [first.runId, ...rest.map((r) => r.runId)]
      for (const id of ids) yield* waitForRun(url, id)
      const spans = ids.map((id) => {
        const mine = lines(log).filter((l) => l.startsWith(id))
        return { start: Number(mine[0]?.split(" ")[2]), end: Number(mine[1]?.split(" ")[2]) }
      })
      expect(spans[0]!.end).toBeLessThanOrEqual(spans[1]!.start)
      expect(spans[1]!.end).toBeLessThanOrEqual(spans[2]!.start)
      const transcript = yield* http(`${url}/api/conversations/${first.conversationId}/messages`)
      const users = (transcript.json as Array<{ role: string; runId: string }>).filter((m) => m.role === "user").map((m) => m.runId)
      expect(users).toEqual(ids)
    }))

  it.scopedLive("messages sent at the same moment to an idle conversation all run, one after the other", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup()
      const first = yield* submit(url, { message: plan({ calls: [{ name: "slow", arguments: { ms: 10 } }] }) })
      yield* waitForRun(url, first.runId)
      // Each submission that finds the conversation idle here takes its lease as it is queued:
      // only one of them may, and the others wait behind it.
      const rest = yield* Effect.forEach([1, 2, 3, 4], () =>
        submit(url, { conversation: first.conversationId, message: plan({ calls: [{ name: "slow", arguments: { ms: 50 } }] }) }), {
        concurrency: "unbounded"
      })
      const runs = yield* Effect.forEach(rest, (r) => waitForRun(url, r.runId))
      expect(runs.map((r) => r.status)).toEqual(["completed", "completed", "completed", "completed"])
      const spans = rest.map(({ runId }) => {
        const mine = lines(log).filter((l) => l.startsWith(runId))
        return { start: Number(mine[0]?.split(" ")[2]), end: Number(mine[1]?.split(" ")[2]) }
      }).sort((a, b) => a.start - b.start)
      for (let i = 1; i < spans.length; i++) expect(spans[i - 1]!.end).toBeLessThanOrEqual(spans[i]!.start)
    }))

  it.scopedLive("messages to different conversations run concurrently", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup()
      const runs = yield* Effect.forEach([1, 2, 3], () =>
        submit(url, { message: plan({ calls: [{ name: "slow", arguments: { ms: 400 } }] }) }), { concurrency: "unbounded" })
      for (const run of runs) yield* waitForRun(url, run.runId)
      const starts = lines(log).filter((l) => l.includes(" start ")).map((l) => Number(l.split(" ")[2]))
      const ends = lines(log).filter((l) => l.includes(" end ")).map((l) => Number(l.split(" ")[2]))
      expect(starts).toHaveLength(3)
      expect(Math.max(...starts)).toBeLessThan(Math.min(...ends))
    }))
})

describe("cancel and steer", () => {
  it.scopedLive("cancelling a run waiting on a slow tool interrupts it and marks it cancelled; a second cancel gets 409", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup()
      const run = yield* submit(url, { message: plan({ calls: [{ name: "slow", arguments: { ms: 30_000 } }] }) })
      for (let i = 0; i < 200 && !lines(log).some((l) => l.includes(" start ")); i++) yield* Effect.sleep("20 millis")
      yield* Effect.sleep("400 millis")
      const cancelled = yield* http(`${url}/api/runs/${run.runId}/cancel`, { method: "POST" })
      expect(cancelled.status).toBe(200)
      expect(cancelled.json).toMatchObject({ id: run.runId, status: "cancelled" })
      expect(lines(log).some((l) => l.includes(" end "))).toBe(false)
      // The call's end says how long it went on before the cancel stopped it.
      const calls = (yield* http(`${url}/api/runs/${run.runId}/events`)).json as Array<{ type: string; data: { durationMs?: number } }>
      expect(calls.find((event) => event.type === "tool.call.failed")?.data.durationMs).toBeGreaterThanOrEqual(400)
      // The call itself is stopped, not left sleeping in the background.
      for (let i = 0; i < 100 && !lines(log).some((l) => l.startsWith(`${run.runId} interrupted `)); i++) yield* Effect.sleep("20 millis")
      expect(lines(log).filter((l) => l.startsWith(`${run.runId} interrupted `))).toHaveLength(1)
      const events = yield* http(`${url}/api/runs/${run.runId}/events`)
      expect((events.json as Array<{ type: string }>).map((e) => e.type)).toContain("run.cancelled")
      const again = yield* http(`${url}/api/runs/${run.runId}/cancel`, { method: "POST" })
      expect(again.status).toBe(409)
      expect(again.json).toMatchObject({ _tag: "RunAlreadyEnded", status: "cancelled" })
      const missing = yield* http(`${url}/api/runs/run_nope/cancel`, { method: "POST" })
      expect(missing.status).toBe(404)
    }))

  it.scopedLive("cancelling a queued run behind another of its conversation keeps it from ever running", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup()
      const first = yield* submit(url, { message: plan({ calls: [{ name: "slow", arguments: { ms: 300 } }] }) })
      const second = yield* submit(url, {
        conversation: first.conversationId,
        message: plan({ calls: [{ name: "record", arguments: { line: "must not happen" } }] })
      })
      const cancelled = yield* http(`${url}/api/runs/${second.runId}/cancel`, { method: "POST" })
      expect(cancelled.json).toMatchObject({ status: "cancelled" })
      yield* waitForRun(url, first.runId)
      yield* Effect.sleep("200 millis")
      expect(lines(log).some((l) => l.includes("must not happen"))).toBe(false)
      expect((yield* http(`${url}/api/runs/${second.runId}`)).json).toMatchObject({ status: "cancelled" })
    }))

  it.scopedLive("cancelling a run waiting in the middle of its conversation's lane lets the one behind it start only after the first ends", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup()
      // The first run's tool outlasts the cancel and the fourth submission by far, even on a loaded machine.
      const first = yield* submit(url, { message: plan({ calls: [{ name: "slow", arguments: { ms: 2000 } }] }) })
      const second = yield* submit(url, { conversation: first.conversationId, message: plan({ calls: [{ name: "slow", arguments: { ms: 10 } }] }) })
      const third = yield* submit(url, { conversation: first.conversationId, message: plan({ calls: [{ name: "slow", arguments: { ms: 10 } }] }) })
      for (let i = 0; i < 500 && !lines(log).some((l) => l.startsWith(first.runId)); i++) yield* Effect.sleep("10 millis")
      expect(lines(log).some((l) => l.startsWith(first.runId))).toBe(true)
      expect((yield* http(`${url}/api/runs/${second.runId}/cancel`, { method: "POST" })).json).toMatchObject({ status: "cancelled" })
      // A fourth message meanwhile goes behind the third, not beside the first.
      const fourth = yield* submit(url, { conversation: first.conversationId, message: plan({ calls: [{ name: "slow", arguments: { ms: 10 } }] }) })
      const ended = yield* Effect.forEach([first, third, fourth], (r) => waitForRun(url, r.runId))
      expect(ended.map((r) => r.status)).toEqual(["completed", "completed", "completed"])
      const span = (runId: string) => {
        const mine = lines(log).filter((l) => l.startsWith(runId))
        return { start: Number(mine[0]?.split(" ")[2]), end: Number(mine[1]?.split(" ")[2]) }
      }
      expect(span(first.runId).end).toBeLessThanOrEqual(span(third.runId).start)
      expect(span(third.runId).end).toBeLessThanOrEqual(span(fourth.runId).start)
      expect(lines(log).some((l) => l.startsWith(second.runId))).toBe(false)
    }))

  it.scopedLive("a run cancelled from another process on the same store stops in the process executing it, which writes nothing after the cancel", () =>
    Effect.gen(function*() {
      const log = newLog()
      const files = durableProject(log)
      const logged = yield* logLines
      const executing = yield* startServer(yield* tempProject(files), { model: plannedModel })
      const other = yield* startServer(yield* tempProject(files), { model: plannedModel, storeFile: executing.storeFile })
      // Long enough to end, and to complete the run, well before the test does: unless it is cut.
      const run = yield* submit(executing.url, { message: plan({ calls: [{ name: "slow", arguments: { ms: 4000 } }] }) })
      for (let i = 0; i < 200 && !lines(log).some((l) => l.startsWith(`${run.runId} start `)); i++) yield* Effect.sleep("20 millis")
      const cancelled = yield* http(`${other.url}/api/runs/${run.runId}/cancel`, { method: "POST" })
      expect(cancelled.json).toMatchObject({ id: run.runId, status: "cancelled" })
      const cancelledAt = Date.now()
      // The executing process interrupts the call within its lease's renewal (a third of 3 s), not at its end.
      for (let i = 0; i < 150 && !lines(log).some((l) => l.startsWith(`${run.runId} interrupted `)); i++) yield* Effect.sleep("20 millis")
      const interrupted = lines(log).find((l) => l.startsWith(`${run.runId} interrupted `))
      expect(interrupted).toBeDefined()
      expect(Number(interrupted?.split(" ")[2]) - cancelledAt).toBeLessThan(2000)
      // And its log says why the run stopped there (once the stop is over and the run read again).
      const why = `run ${run.runId} was cancelled elsewhere while this process held its conversation's lease: the run stopped here, having written nothing after the cancel`
      for (let i = 0; i < 150 && !logged.includes(why); i++) yield* Effect.sleep("20 millis")
      expect(logged).toContain(why)
      // Past the call's end: nothing of the run was written after the cancel, by either process.
      yield* Effect.sleep("4500 millis")
      expect(lines(log).some((l) => l.startsWith(`${run.runId} end `))).toBe(false)
      for (const url of [executing.url, other.url]) {
        expect((yield* http(`${url}/api/runs/${run.runId}`)).json).toMatchObject({ status: "cancelled" })
        const types = ((yield* http(`${url}/api/runs/${run.runId}/events`)).json as Array<{ type: string }>).map((e) => e.type)
        expect(types.at(-1)).toBe("run.cancelled")
      }
    }), 20_000)

  it.scopedLive("an approval asked for just after a cancel from another process took the run is never stored: the step that would store it is fenced off", () =>
    Effect.gen(function*() {
      // The tool's approval policy holds its process for 5 s: the cancel comes from the other
      // process while it does, so the approval is asked for after the cancel took the run. The
      // policy leaves a file as it starts and one as it returns: the model's answer may not be
      // stored before it starts (the step that stores it may wait for the run's next commit).
      const marker = (name: string) => join(tmpdir(), `foundry-policy-${name}-${randomUUID()}`)
      const started = marker("started")
      const returned = marker("returned")
      yield* Effect.addFinalizer(() => Effect.sync(() => [started, returned].forEach((file) => rmSync(file, { force: true }))))
      const root = yield* tempProject(payerFiles(`() => {
    const fs = process.getBuiltinModule("node:fs")
    fs.writeFileSync(${JSON.stringify(started)}, "")
    const until = Date.now() + 5000
    while (Date.now() < until) {}
    fs.writeFileSync(${JSON.stringify(returned)}, "")
    return true
  }`))
      const port = yield* freePort
      const executing = yield* startCli(["start", root, "--port", String(port)])
      yield* executing.waitFor(/listening on/)
      const other = yield* startServer(root, { storeFile: join(root, ".foundry/foundry.db") })
      const created = yield* http(`http://127.0.0.1:${port}/api/runs`, { body: { agent: "payer", message: "pay" } })
      const runId = (created.json as Created).runId
      for (let i = 0; i < 200 && !existsSync(started); i++) yield* Effect.sleep("10 millis")
      expect(existsSync(started)).toBe(true)
      const cancelled = yield* http(`${other.url}/api/runs/${runId}/cancel`, { method: "POST" })
      expect(cancelled.json).toMatchObject({ status: "cancelled" })
      // The cancel took the run while the policy held the executing process: it asks after.
      expect(existsSync(returned)).toBe(false)
      for (let i = 0; i < 100 && !existsSync(returned); i++) yield* Effect.sleep("100 millis")
      expect(existsSync(returned)).toBe(true)
      // Fenced off with its step (or the execution stopped by the lease's renewal before it): never
      // stored. An approval stored as it was asked, ahead of its step, showed within moments.
      for (let i = 0; i < 10; i++) {
        yield* Effect.sleep("100 millis")
        expect((yield* http(`${other.url}/api/approvals?run=${runId}`)).json).toEqual([])
      }
      expect((yield* http(`${other.url}/api/runs/${runId}`)).json).toMatchObject({ status: "cancelled" })
      const types = (yield* http(`${other.url}/api/runs/${runId}/events`)).json as Array<{ type: string }>
      expect(types.map((event) => event.type)).not.toContain("approval.requested")
      // The executing process's log says why the run stopped there.
      yield* executing.waitFor(new RegExp(`run ${runId} was cancelled elsewhere while this process held its conversation's lease`))
    }), 30_000)

  it.scopedLive("cancels of a running run sent at once: one ends it (200), the others find it ended (409), one run.cancelled", () =>
    Effect.gen(function*() {
      const { url } = yield* setup()
      const run = yield* runningSlowly(url)
      const answers = yield* Effect.forEach([1, 2, 3], () => http(`${url}/api/runs/${run.runId}/cancel`, { method: "POST" }), {
        concurrency: "unbounded"
      })
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409, 409])
      expect(answers.find((answer) => answer.status === 409)?.json).toMatchObject({ _tag: "RunAlreadyEnded", status: "cancelled" })
      const events = (yield* http(`${url}/api/runs/${run.runId}/events`)).json as Array<{ type: string }>
      expect(events.filter((event) => event.type === "run.cancelled")).toHaveLength(1)
    }))

  it.scopedLive("steers of a running run sent at once: one successor, the other steers refused with 409", () =>
    Effect.gen(function*() {
      const { url } = yield* setup()
      const run = yield* runningSlowly(url)
      const answers = yield* Effect.forEach(["one", "two", "three"], (line) =>
        http(`${url}/api/runs/${run.runId}/steer`, { body: { message: plan({ calls: [{ name: "record", arguments: { line } }] }) } }), {
        concurrency: "unbounded"
      })
      expect(answers.map((answer) => answer.status).sort()).toEqual([202, 409, 409])
      const successor = answers.find((answer) => answer.status === 202)!.json as { runId: string }
      expect((yield* waitForRun(url, successor.runId)).status).toBe("completed")
      const runs = (yield* http(`${url}/api/runs?conversation=${run.conversationId}`)).json as Array<{ id: string; steeredFrom: string | null }>
      expect(runs.filter((listed) => listed.steeredFrom === run.runId).map((listed) => listed.id)).toEqual([successor.runId])
      const transcript = (yield* http(`${url}/api/conversations/${run.conversationId}/messages`)).json as Array<{ role: string }>
      expect(transcript.filter((message) => message.role === "user")).toHaveLength(2)
    }))

  it.scopedLive("steering cancels the run and starts a new one in the same conversation, linked to it", () =>
    Effect.gen(function*() {
      const { url } = yield* setup()
      const run = yield* runningSlowly(url)
      const steered = yield* http(`${url}/api/runs/${run.runId}/steer`, {
        body: { message: plan({ calls: [{ name: "record", arguments: { line: "instead" } }] }) }
      })
      expect(steered.status).toBe(202)
      const next = steered.json as { runId: string; conversationId: string; steeredFrom: string }
      expect(next).toMatchObject({ conversationId: run.conversationId, steeredFrom: run.runId })
      const done = yield* waitForRun(url, next.runId)
      expect(done).toMatchObject({ status: "completed", steeredFrom: run.runId, output: "done: recorded instead" })
      expect((yield* http(`${url}/api/runs/${run.runId}`)).json).toMatchObject({ status: "cancelled" })
    }))
})

describe("approvals", () => {
  const transfer = plan({ calls: [{ name: "transfer", arguments: { amount: 250 } }] })

  const pendingApproval = (url: string, runId: string) =>
    Effect.gen(function*() {
      yield* waitForStatus(url, runId, "suspended")
      const pending = yield* http(`${url}/api/approvals?status=pending`)
      const approval = (pending.json as Array<{ id: string; runId: string; tool: string; input: unknown }>).find((a) => a.runId === runId)
      expect(approval).toMatchObject({ tool: "transfer", input: { amount: 250 } })
      return approval!.id
    })

  it.scopedLive("an approved call runs and the run completes; a second decision gets 409", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup()
      const run = yield* submit(url, { message: transfer })
      const approvalId = yield* pendingApproval(url, run.runId)
      expect(lines(log)).toEqual([])
      const decided = yield* http(`${url}/api/approvals/${approvalId}`, { body: { decision: "approve" } })
      expect(decided.status).toBe(200)
      expect(decided.json).toMatchObject({ id: approvalId, status: "approved" })
      expect(yield* waitForRun(url, run.runId)).toMatchObject({ status: "completed", output: "done: transferred 250" })
      expect(lines(log)).toEqual([`${run.runId} transfer 250`])
      const again = yield* http(`${url}/api/approvals/${approvalId}`, { body: { decision: "deny" } })
      expect(again.status).toBe(409)
      expect(again.json).toMatchObject({ _tag: "ApprovalAlreadyDecided", status: "approved" })
      const types = ((yield* http(`${url}/api/runs/${run.runId}/events`)).json as Array<{ type: string }>).map((e) => e.type)
      expect(types).toEqual(expect.arrayContaining(["approval.requested", "run.suspended", "approval.decided", "run.resumed"]))
    }))

  it.scopedLive("a run cancelled while it waits for a person closes its approval before it ends: its event stream tells the approval's expiry", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup()
      const run = yield* submit(url, { message: transfer })
      const approvalId = yield* pendingApproval(url, run.runId)
      expect((yield* http(`${url}/api/runs/${run.runId}/cancel`, { method: "POST" })).status).toBe(200)
      const types = ((yield* http(`${url}/api/runs/${run.runId}/events`)).json as Array<{ type: string }>).map((e) => e.type)
      expect(types.slice(-3)).toEqual(["approval.decided", "tool.call.failed", "run.cancelled"])
      // The stream of an ended run ends with its end: what comes before it is all a follower gets.
      const stream = yield* http(`${url}/api/runs/${run.runId}/events`, { headers: { accept: "text/event-stream" } })
      expect(stream.text).toMatch(/event: approval\.decided[\s\S]*event: run\.cancelled/)
      const closed = ((yield* http(`${url}/api/approvals?run=${run.runId}`)).json as Array<{ id: string }>).find((a) => a.id === approvalId)
      expect(closed).toMatchObject({ status: "expired", reason: "the run was cancelled before a decision" })
      // Not resumed by its approval's closing: the call never ran.
      expect(types.filter((type) => type === "run.resumed")).toEqual([])
      expect(lines(log)).toEqual([])
    }))

  it.scopedLive("a denied call never runs and the model is told why", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup()
      const run = yield* submit(url, { message: transfer })
      const approvalId = yield* pendingApproval(url, run.runId)
      yield* http(`${url}/api/approvals/${approvalId}`, { body: { decision: "deny", reason: "too much" } })
      const done = yield* waitForRun(url, run.runId)
      expect(done).toMatchObject({ status: "completed" })
      expect(done.output).toContain("a person denied this call to transfer: too much")
      expect(lines(log)).toEqual([])
    }))

  it.scopedLive("an approval nobody decides expires as denied", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup(`{ approvalTimeout: "300 millis" }`)
      const run = yield* submit(url, { message: transfer })
      const done = yield* waitForRun(url, run.runId)
      expect(done.output).toContain("expired before anyone decided")
      expect(lines(log)).toEqual([])
      const all = yield* http(`${url}/api/approvals`)
      expect((all.json as Array<{ runId: string; status: string }>).find((a) => a.runId === run.runId)?.status).toBe("expired")
    }))

  it.scopedLive("a decision after the approval's time, to a process whose expiry has not looked yet, is refused as expired: the call never runs", () =>
    Effect.gen(function*() {
      const log = newLog()
      const storeFile = join(tmpdir(), `foundry-store-${randomUUID()}.db`)
      const files = durableProject(log, `{ approvalTimeout: "2 seconds" }`)
      // Started before the approval is asked for: its expiry looks again only in ten minutes.
      const deciding = yield* startServer(yield* tempProject(files), { model: plannedModel, storeFile })
      // The process that asks for it stops before its own expiry could look.
      const asked = yield* Effect.scoped(Effect.gen(function*() {
        const asking = yield* startServer(yield* tempProject(files), { model: plannedModel, storeFile })
        const run = yield* submit(asking.url, { message: transfer })
        const approvalId = yield* pendingApproval(asking.url, run.runId)
        return { run, approvalId, at: Date.now() }
      }))
      yield* Effect.sleep(Duration.millis(Math.max(0, asked.at + 2_500 - Date.now())))
      const late = yield* http(`${deciding.url}/api/approvals/${asked.approvalId}`, { body: { decision: "approve" } })
      expect(late.status).toBe(409)
      expect(late.json).toMatchObject({ _tag: "ApprovalAlreadyDecided", status: "expired", message: expect.stringContaining("expired") })
      const done = yield* waitForRun(deciding.url, asked.run.runId)
      expect(done.output).toContain("expired before anyone decided")
      expect(lines(log)).toEqual([])
    }))

  it.live("a run suspended on an approval survives a restart and resumes on the decision", () =>
    Effect.gen(function*() {
      const log = newLog()
      const storeFile = join(tmpdir(), `foundry-store-${randomUUID()}.db`)
      const files = durableProject(log)
      const first = yield* Effect.scoped(Effect.gen(function*() {
        const project = yield* tempProject(files)
        const server = yield* startServer(project, { model: plannedModel, storeFile })
        const run = yield* submit(server.url, { message: transfer })
        const approvalId = yield* pendingApproval(server.url, run.runId)
        return { run, approvalId }
      }))
      yield* Effect.scoped(Effect.gen(function*() {
        const project = yield* tempProject(files)
        const server = yield* startServer(project, { model: plannedModel, storeFile })
        expect((yield* http(`${server.url}/api/runs/${first.run.runId}`)).json).toMatchObject({ status: "suspended" })
        yield* http(`${server.url}/api/approvals/${first.approvalId}`, { body: { decision: "approve" } })
        expect(yield* waitForRun(server.url, first.run.runId)).toMatchObject({ status: "completed" })
        expect(lines(log)).toEqual([`${first.run.runId} transfer 250`])
      }))
    }))
})

describe("submission and failures", () => {
  it.scopedLive("a repeated Idempotency-Key returns the original run and starts nothing", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup()
      const body = { message: plan({ calls: [{ name: "record", arguments: { line: "once" } }] }) }
      const first = yield* submit(url, body, { "idempotency-key": "order-42-refund" })
      const second = yield* submit(url, body, { "idempotency-key": "order-42-refund" })
      expect(second).toEqual(first)
      yield* waitForRun(url, first.runId)
      const runs = yield* http(`${url}/api/runs?agent=worker`)
      expect(runs.json).toHaveLength(1)
      expect(lines(log).filter((l) => l.endsWith(" once"))).toHaveLength(1)
    }))

  it.scopedLive("a model that answers 429 is retried and the run completes", () =>
    Effect.gen(function*() {
      let calls = 0
      const model = Scripted.make(() => {
        calls++
        return calls === 1 ? { error: { kind: "transient", status: 429, message: "rate limited" } } : { text: "fine now" }
      })
      const { url } = yield* setup(`{ modelRetry: { base: "10 millis" } }`, model)
      const run = yield* submit(url, { message: "hi" })
      const done = yield* waitForRun(url, run.runId)
      expect(done.error).toBeUndefined()
      expect(done).toMatchObject({ status: "completed", output: "fine now" })
      expect(calls).toBe(2)
      const events = (yield* http(`${url}/api/runs/${run.runId}/events`)).json as Array<{ type: string; data: { status?: number } }>
      expect(events.find((e) => e.type === "model.retry")?.data.status).toBe(429)
    }))

  it.scopedLive("a model that answers 400 fails the run at once with a readable error", () =>
    Effect.gen(function*() {
      let calls = 0
      const model = Scripted.make(() => {
        calls++
        return { error: { kind: "permanent", status: 400, message: "unknown parameter: temprature" } }
      })
      const { url } = yield* setup("", model)
      const run = yield* submit(url, { message: "hi" })
      const done = yield* waitForRun(url, run.runId)
      expect(done).toMatchObject({ status: "failed" })
      expect(done.error).toContain("unknown parameter: temprature")
      expect(calls).toBe(1)
    }))

  it.scopedLive("a tool that keeps failing ends the run after the configured count", () =>
    Effect.gen(function*() {
      const { url } = yield* setup(`{ maxToolFailures: 2 }`)
      const run = yield* submit(url, { message: plan({ repeat: true, calls: [{ name: "broken", arguments: {} }] }) })
      const done = yield* waitForRun(url, run.runId)
      expect(done).toMatchObject({ status: "failed" })
      expect(done.error).toContain("2 tool calls failed in a row")
      expect(done.error).toContain("this tool is broken")
    }))
})
