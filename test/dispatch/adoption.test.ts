import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { type CliProcess, freePort, serveProject, startCli } from "../support/cli.js"
import { durableProject, plan, slowMarkerOf } from "../support/durableProject.js"
import { allEvents, readFrames, runFrames } from "../support/eventFeed.js"
import { http, pendingApproval, type RunBody, waitForRun } from "../support/server.js"
import { answeringAgentFile, answerToolFile, tempProject } from "../support/tempProject.js"

const lines = (log: string) => existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").filter((l) => l !== "") : []

interface EventBody {
  readonly type: string
  readonly data: { readonly reason?: string }
}

const eventsOf = (url: string, runId: string) => Effect.map(http(`${url}/api/runs/${runId}/events`), (r) => r.json as ReadonlyArray<EventBody>)

const eventTypes = (url: string, runId: string) => Effect.map(eventsOf(url, runId), (events) => events.map((e) => e.type))

/** Polls until `check` holds for the log's lines; returns the first line it found. */
const waitForLine = (log: string, check: (line: string) => boolean) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 600; attempt++) {
      const found = lines(log).find(check)
      if (found !== undefined) return found
      yield* Effect.sleep("25 millis")
    }
    return yield* Effect.die(new Error(`never logged the expected line: ${JSON.stringify(lines(log))}`))
  })

/** Polls until `check` holds for the run's event types (as the server at `url` reads them from the store). */
const waitForEvents = (url: string, runId: string, check: (types: ReadonlyArray<string>) => boolean) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 600; attempt++) {
      if (check(yield* eventTypes(url, runId))) return
      yield* Effect.sleep("25 millis")
    }
    return yield* Effect.die(new Error(`run ${runId} never reached the expected point: ${JSON.stringify(yield* eventTypes(url, runId))}`))
  })

/** Kills the process with SIGKILL and waits until it has exited. */
const killHard = (process: CliProcess) =>
  Effect.async<void>((resume) => {
    process.child.once("exit", () => resume(Effect.void))
    process.child.kill("SIGKILL")
  })

const submit = (url: string, message: string, conversation?: string) =>
  Effect.map(
    http(`${url}/api/runs`, { body: { agent: "worker", message, ...(conversation === undefined ? {} : { conversation }) } }),
    (r) => r.json as { runId: string; conversationId: string }
  )

describe("a server takes up the runs of a process on its store that died", () => {
  it.scopedLive("a run of `foundry run` killed with SIGKILL mid-run completes on the server already running, its recorded call not run again", () =>
    Effect.gen(function*() {
      const log = join(tmpdir(), `foundry-adopt-${randomUUID()}.log`)
      const root = yield* tempProject(durableProject(log, "", { plannedModelInFile: true }))
      writeFileSync(slowMarkerOf(log), "")
      // The server starts first: its start's recovery finds nothing; only a later look can find the run.
      const server = yield* serveProject(root)
      const command = yield* startCli(["run", "worker", plan({ finalDelay: 60_000, calls: [{ name: "record", arguments: { line: "adopted" } }] }), "--dir", root])
      const recorded = yield* waitForLine(log, (line) => line.endsWith(" adopted"))
      const runId = recorded.split(" ")[0]!
      // The call's result is recorded and the next model turn under way in the command's process.
      yield* waitForEvents(server.url, runId, (types) => types.filter((type) => type === "model.turn.started").length === 2)
      yield* killHard(command)

      rmSync(slowMarkerOf(log))
      const done = yield* waitForRun(server.url, runId, 1200)
      expect(done).toMatchObject({ status: "completed", output: "done: recorded adopted" })
      // The same server, not a restarted one.
      expect(server.server.child.exitCode).toBeNull()
      expect(lines(log).filter((line) => line.endsWith(" adopted"))).toHaveLength(1)
      const types = yield* eventTypes(server.url, runId)
      expect(types.filter((type) => type === "tool.call.started")).toHaveLength(1)
      expect(types).toContain("run.resumed")
      yield* server.server.waitFor(/took up 1 unfinished run of a process on this store that stopped/)
    }), { timeout: 90_000 })

  it.scopedLive("a second `foundry start` killed mid-run: its running run and the one queued behind it complete on the other, in order", () =>
    Effect.gen(function*() {
      const log = join(tmpdir(), `foundry-adopt-${randomUUID()}.log`)
      const root = yield* tempProject(durableProject(log, "", { plannedModelInFile: true }))
      writeFileSync(slowMarkerOf(log), "")
      const survivor = yield* serveProject(root)
      const doomed = yield* serveProject(root)
      const first = yield* submit(doomed.url, plan({ calls: [{ name: "charge", arguments: { id: "card-9", ms: 60_000 } }] }))
      const second = yield* submit(doomed.url, plan({ calls: [{ name: "record", arguments: { line: "second" } }] }), first.conversationId)
      yield* waitForEvents(survivor.url, first.runId, (types) => types.includes("tool.call.started"))
      yield* killHard(doomed.server)

      rmSync(slowMarkerOf(log))
      const firstDone = yield* waitForRun(survivor.url, first.runId, 1200)
      const secondDone = yield* waitForRun(survivor.url, second.runId, 1200)
      expect(firstDone.status).toBe("completed")
      expect(secondDone.status).toBe("completed")
      expect(Number(secondDone.startedAt)).toBeGreaterThanOrEqual(Number(firstDone.finishedAt))
      // The charge's side effect is keyed by its idempotency key: once, though its call ran again.
      expect(lines(log).filter((line) => line === "charge-card-9")).toHaveLength(1)
      expect(lines(log).filter((line) => line.endsWith(" second"))).toHaveLength(1)
      expect(survivor.server.child.exitCode).toBeNull()
    }), { timeout: 90_000 })
  it.scopedLive("a run a killed `foundry start` queued while the live server held its conversation runs there once the conversation's run before it has ended", () =>
    Effect.gen(function*() {
      const log = join(tmpdir(), `foundry-adopt-${randomUUID()}.log`)
      const root = yield* tempProject(durableProject(log, "", { plannedModelInFile: true }))
      const holder = yield* serveProject(root)
      const doomed = yield* serveProject(root)
      const first = yield* submit(holder.url, plan({ calls: [{ name: "slow", arguments: { ms: 3000 } }] }))
      yield* waitForLine(log, (line) => line.startsWith(`${first.runId} start `))
      // Queued where it was sent, waiting for the lease the live server holds; its process then dies.
      const next = yield* submit(doomed.url, plan({ calls: [{ name: "record", arguments: { line: "next" } }] }), first.conversationId)
      yield* killHard(doomed.server)

      const firstDone = yield* waitForRun(holder.url, first.runId, 1200)
      const nextDone = yield* waitForRun(holder.url, next.runId, 1200)
      expect(firstDone.status).toBe("completed")
      expect(nextDone.status).toBe("completed")
      expect(Number(nextDone.startedAt)).toBeGreaterThanOrEqual(Number(firstDone.finishedAt))
      expect(lines(log).filter((line) => line.endsWith(" next"))).toHaveLength(1)
      expect(holder.server.output()).toMatch(/took up 1 unfinished run /)
    }), { timeout: 90_000 })
})

describe("a server leaves alone the runs of a live process on its store", () => {
  it.scopedLive("a run waiting for a slot in another live server, its conversation's lease given up meanwhile, executes there, after the run that has the slot", () =>
    Effect.gen(function*() {
      const log = join(tmpdir(), `foundry-live-${randomUUID()}.log`)
      // One run at a time: a run queued behind another of its conversation waits for the slot without a lease.
      const root = yield* tempProject(durableProject(log, `{ concurrency: 1 }`, { plannedModelInFile: true }))
      const looking = yield* serveProject(root)
      const busy = yield* serveProject(root)
      const first = yield* submit(busy.url, plan({ calls: [{ name: "slow", arguments: { ms: 3000 } }] }))
      yield* waitForLine(log, (line) => line.startsWith(`${first.runId} start `))
      // Ready before the conversation's next run: it gets the slot when the first run ends, for
      // longer than two of the other server's looks.
      const other = yield* submit(busy.url, plan({ calls: [{ name: "slow", arguments: { ms: 8000 } }] }))
      const next = yield* submit(busy.url, plan({ calls: [{ name: "slow", arguments: { ms: 10 } }] }), first.conversationId)

      const otherDone = yield* waitForRun(busy.url, other.runId, 1200)
      const nextDone = yield* waitForRun(busy.url, next.runId, 1200)
      expect(otherDone.status).toBe("completed")
      expect(nextDone.status).toBe("completed")
      const at = (runId: string, what: string) => Number(lines(log).find((line) => line.startsWith(`${runId} ${what} `))?.split(" ")[2])
      // Executed where it waited, once the run with the slot had ended; not by the other server meanwhile.
      expect(at(next.runId, "start")).toBeGreaterThanOrEqual(at(other.runId, "end"))
      expect(lines(log).filter((line) => line.startsWith(`${next.runId} start `))).toHaveLength(1)
      expect(yield* eventTypes(busy.url, next.runId)).not.toContain("run.resumed")
      expect(looking.server.output()).not.toMatch(/took up/)
    }), { timeout: 90_000 })

  it.scopedLive("a server started beside a live one leaves it its running and queued runs: the runs it takes itself do not wait behind them", () =>
    Effect.gen(function*() {
      const log = join(tmpdir(), `foundry-beside-${randomUUID()}.log`)
      // One run at a time in each: a slot spent waiting for a lease the live server holds is the late server's only one.
      const root = yield* tempProject(durableProject(log, `{ concurrency: 1 }`, { plannedModelInFile: true }))
      const busy = yield* serveProject(root)
      const long = yield* submit(busy.url, plan({ calls: [{ name: "slow", arguments: { ms: 6000 } }] }))
      yield* waitForLine(log, (line) => line.startsWith(`${long.runId} start `))
      // Behind the long run for the live server's slot, its conversation's lease taken with its submission.
      const queued = yield* submit(busy.url, plan({ calls: [{ name: "slow", arguments: { ms: 10 } }] }))
      const late = yield* serveProject(root)
      const own = yield* submit(late.url, plan({ calls: [{ name: "slow", arguments: { ms: 10 } }] }))

      const ownDone = yield* waitForRun(late.url, own.runId, 1200)
      expect(ownDone.status).toBe("completed")
      const at = (runId: string, what: string) => Number(lines(log).find((line) => line.startsWith(`${runId} ${what} `))?.split(" ")[2])
      // Not after the live server's runs, which the late one would have waited for.
      expect(at(own.runId, "end")).toBeLessThan(at(long.runId, "start") + 6000)
      expect((yield* waitForRun(busy.url, long.runId, 1200)).status).toBe("completed")
      expect((yield* waitForRun(busy.url, queued.runId, 1200)).status).toBe("completed")
      for (const run of [long, queued]) {
        expect(lines(log).filter((line) => line.startsWith(`${run.runId} start `))).toHaveLength(1)
        expect(yield* eventTypes(busy.url, run.runId)).not.toContain("run.resumed")
      }
      expect(at(queued.runId, "start")).toBeGreaterThanOrEqual(at(long.runId, "end"))
    }), { timeout: 90_000 })

  it.scopedLive("a run executing in a live `foundry run` is not taken by the server, however long it runs", () =>
    Effect.gen(function*() {
      const log = join(tmpdir(), `foundry-live-${randomUUID()}.log`)
      const root = yield* tempProject(durableProject(log, "", { plannedModelInFile: true }))
      const server = yield* serveProject(root)
      // Longer than two of the server's looks.
      const result = yield* startCli(["run", "worker", plan({ calls: [{ name: "slow", arguments: { ms: 8000 } }] }), "--dir", root])
      const started = yield* waitForLine(log, (line) => line.includes(" start "))
      const runId = started.split(" ")[0]!
      yield* result.waitFor(/done: slept 8000/)
      const done = yield* waitForRun(server.url, runId)
      expect(done.status).toBe("completed")
      expect(lines(log).filter((line) => line.startsWith(`${runId} start `))).toHaveLength(1)
      expect(lines(log).filter((line) => line.startsWith(`${runId} interrupted `))).toHaveLength(0)
      expect(yield* eventTypes(server.url, runId)).not.toContain("run.resumed")
      expect(server.server.output()).not.toMatch(/took up/)
    }), { timeout: 90_000 })
})

/** Two servers on one store (SQLite) of the durable project, its side-effect log named after `name`. */
const twoServers = (name: string) =>
  Effect.gen(function*() {
    const log = join(tmpdir(), `foundry-${name}-${randomUUID()}.log`)
    const root = yield* tempProject(durableProject(log, "", { plannedModelInFile: true }))
    return { log, a: yield* serveProject(root), b: yield* serveProject(root) }
  })

describe("two servers on one store", () => {
  it.scopedLive("a run's event stream followed through the server that does not execute it carries its events as they happen, its answer word by word, to its end", () =>
    Effect.gen(function*() {
      const { a: executing, b: other, log } = yield* twoServers("follow")
      // The planned model's delays real: the answer is written a word at a time.
      writeFileSync(slowMarkerOf(log), "")
      const say = "one two three four five six seven eight"
      const run = yield* submit(executing.url, plan({ calls: [{ name: "slow", arguments: { ms: 1500 } }], say, wordDelay: 150 }))
      const started = Date.now()
      const frames = yield* runFrames(other.url, run.runId).pipe(
        Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("the stream never ended") })
      )
      const types = frames.map((frame) => frame.type)
      expect(types.indexOf("tool.call.completed")).toBeGreaterThan(0)
      expect(types[types.length - 1]).toBe("run.completed")
      // Live, not read back once the run had ended: the stream was open while the tool slept.
      expect(lines(log).find((line) => line.startsWith(`${run.runId} start `))).toBeDefined()
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000)
      // The answer as the other server's model writes it (text deltas are never stored: they come over the store's channel).
      const deltas = frames.filter((frame) => frame.type === "model.delta")
      expect(deltas.map((frame) => frame.data.text).join("")).toBe(say)
      expect(deltas[deltas.length - 1]!.at - deltas[0]!.at).toBeGreaterThanOrEqual(500)
      expect(types.lastIndexOf("model.delta")).toBeLessThan(types.lastIndexOf("model.turn.completed"))
    }), { timeout: 90_000 })

  it.scopedLive("runs of one conversation sent to both execute once each, in the order they were accepted, wherever they were sent", () =>
    Effect.gen(function*() {
      const { a, b, log } = yield* twoServers("order")
      const first = yield* submit(a.url, plan({ calls: [{ name: "slow", arguments: { ms: 1500 } }] }))
      yield* waitForLine(log, (line) => line.startsWith(`${first.runId} start `))
      // Accepted while the first runs, alternately by each server: each waits where it was sent.
      const later: Array<{ readonly runId: string }> = []
      for (const n of [2, 3, 4, 5]) {
        later.push(yield* submit(n % 2 === 0 ? b.url : a.url, plan({ calls: [{ name: "record", arguments: { line: `message ${n}` } }] }), first.conversationId))
      }
      for (const run of [first, ...later]) expect((yield* waitForRun(a.url, run.runId, 1200)).status).toBe("completed")
      const recorded = lines(log).filter((line) => line.includes(" message "))
      expect(recorded.map((line) => line.split(" ").slice(2).join(" "))).toEqual(["message 2", "message 3", "message 4", "message 5"])
      // The conversation's transcript in the same order, each message once.
      const messages = yield* http(`${a.url}/api/conversations/${first.conversationId}/messages`)
      const users = (messages.json as ReadonlyArray<{ readonly role?: string; readonly content?: unknown }>)
        .filter((message) => message.role === "user").map((message) => String(message.content))
      expect(users.map((content) => JSON.parse(content).calls?.[0]?.arguments?.line ?? "first")).toEqual(["first", "message 2", "message 3", "message 4", "message 5"])
    }), { timeout: 90_000 })

  it.scopedLive("runs of one conversation sent alternately to both while each takes a while execute once each, one at a time, in order", () =>
    Effect.gen(function*() {
      const { a, b, log } = yield* twoServers("alternate")
      const first = yield* submit(a.url, plan({ calls: [{ name: "slow", arguments: { ms: 1000 } }] }))
      const rest: Array<{ readonly runId: string }> = []
      for (let n = 2; n <= 6; n++) {
        rest.push(yield* submit(n % 2 === 0 ? b.url : a.url, plan({ calls: [{ name: "slow", arguments: { ms: 1000 } }] }), first.conversationId))
      }
      const runs = [first, ...rest]
      for (const run of runs) expect((yield* waitForRun(a.url, run.runId, 1200)).status).toBe("completed")
      const calls = lines(log).filter((line) => / (start|end|interrupted) /.test(line)).map((line) => line.split(" ").slice(0, 2).join(" "))
      // Each run's call once, never two at a time, in the order they were accepted.
      expect(calls).toEqual(runs.flatMap((run) => [`${run.runId} start`, `${run.runId} end`]))
    }), { timeout: 120_000 })

  it.scopedLive("a run taken up ahead of a later one executes on its own: cancelling the later one leaves it be", () =>
    Effect.gen(function*() {
      const { a, b, log } = yield* twoServers("ahead")
      const first = yield* submit(a.url, plan({ calls: [{ name: "slow", arguments: { ms: 1000 } }] }))
      yield* waitForLine(log, (line) => line.startsWith(`${first.runId} start `))
      // Accepted by the other server while the first runs, then one more by this one: this one runs
      // the other's ahead of its own once the first has ended.
      const second = yield* submit(b.url, plan({ calls: [{ name: "slow", arguments: { ms: 1500 } }] }), first.conversationId)
      const third = yield* submit(a.url, plan({ calls: [{ name: "record", arguments: { line: "third" } }] }), first.conversationId)
      yield* waitForLine(log, (line) => line.startsWith(`${second.runId} start `))
      expect((yield* http(`${a.url}/api/runs/${third.runId}/cancel`, { method: "POST" })).status).toBe(200)
      expect((yield* waitForRun(a.url, second.runId, 1200)).status).toBe("completed")
      expect(lines(log).filter((line) => line.startsWith(`${second.runId} `)).map((line) => line.split(" ")[1])).toEqual(["start", "end"])
      expect((yield* waitForRun(a.url, third.runId)).status).toBe("cancelled")
      expect(lines(log).filter((line) => line.endsWith(" third"))).toEqual([])
    }), { timeout: 90_000 })

  it.scopedLive("the events feed followed through one carries both servers' events once each, in the order of their numbers", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoServers("feed")
      const feed = yield* readFrames(a.url, {}, (_ids, types) => types.filter((type) => type === "run.completed").length >= 8).pipe(
        Effect.timeoutFail({ duration: "60 seconds", onTimeout: () => new Error("the feed never carried the eighth run's end") }),
        Effect.fork
      )
      yield* Effect.sleep("500 millis")
      // Runs in conversations of their own, sent to both at once: each server writes while the other does.
      const runs = yield* Effect.forEach(
        Array.from({ length: 8 }, (_, n) => n),
        (n) => submit(n % 2 === 0 ? a.url : b.url, plan({ calls: [{ name: "record", arguments: { line: `feed ${n}` } }] })),
        { concurrency: "unbounded" }
      )
      for (const run of runs) expect((yield* waitForRun(a.url, run.runId, 1200)).status).toBe("completed")
      const { ids } = yield* Fiber.join(feed)
      const stored = (yield* allEvents(a.url)).map((event) => event.seq)
      // What a client resuming after the last id it got relies on: every stored event, each once, in order.
      expect(ids).toEqual(stored.slice(stored.indexOf(ids[0] ?? -1), stored.indexOf(ids[0] ?? -1) + ids.length))
      expect(ids.length).toBeGreaterThanOrEqual(8 * 4)
    }), { timeout: 90_000 })
})

describe("a server wakes the suspended runs a process on its store left waiting when it died", () => {
  it.scopedLive("a parent whose child ended in a `foundry start` killed before it resumed the parent completes on the other server", () =>
    Effect.gen(function*() {
      const log = join(tmpdir(), `foundry-wake-${randomUUID()}.log`)
      // One run at a time: the woken parent waits in the doomed server for the slot another run holds.
      const root = yield* tempProject(durableProject(log, `{ concurrency: 1 }`, { plannedModelInFile: true }))
      writeFileSync(slowMarkerOf(log), "")
      const survivor = yield* serveProject(root)
      const doomed = yield* serveProject(root)
      const childPlan = plan({ calls: [{ name: "slow", arguments: { ms: 1500 } }] })
      const parent = yield* Effect.map(
        http(`${doomed.url}/api/runs`, { body: { agent: "lead", message: plan({ calls: [{ name: "ask-worker", arguments: { message: childPlan } }] }) } }),
        (r) => r.json as { runId: string }
      )
      const childId = (yield* waitForLine(log, (line) => line.includes(" start "))).split(" ")[0]!
      // Queued while the child has the slot: it takes the slot before the parent its child's end wakes.
      yield* submit(doomed.url, plan({ calls: [{ name: "charge", arguments: { id: "hold", ms: 60_000 } }] }))
      yield* waitForLine(log, (line) => line === "charge-hold")
      const child = (yield* http(`${survivor.url}/api/runs/${childId}`)).json as RunBody
      expect(child.status).toBe("completed")
      expect(((yield* http(`${survivor.url}/api/runs/${parent.runId}`)).json as RunBody).status).toBe("suspended")
      yield* killHard(doomed.server)

      rmSync(slowMarkerOf(log))
      const done = yield* waitForRun(survivor.url, parent.runId, 1200)
      expect(done.status).toBe("completed")
      expect(survivor.server.child.exitCode).toBeNull()
      // The child is not run again: its answer is read from the store.
      expect(lines(log).filter((line) => line.startsWith(`${childId} start `))).toHaveLength(1)
      yield* survivor.server.waitFor(/woke 1 suspended run that a process on this store left waiting when it stopped/)
    }), { timeout: 90_000 })

  it.scopedLive("a run a killed `foundry dev` suspended for a build with its agent completes on a server whose build has it", () =>
    Effect.gen(function*() {
      const toolPath = "agents/helper/tools/answer.tool.ts"
      const askingTool = answerToolFile(JSON.stringify("approved"))
        .replace(`description: "Returns the current answer",`, `description: "Returns the current answer", approval: "always",`)
      const root = yield* tempProject({ "agents/helper/agent.ts": answeringAgentFile, [toolPath]: askingTool })
      const survivor = yield* serveProject(root)
      const created = yield* http(`${survivor.url}/api/runs`, { body: { agent: "helper", message: "what is the answer?" } })
      expect(created.status, created.text).toBe(202)
      const runId = (created.json as { runId: string }).runId
      const approval = yield* pendingApproval(survivor.url, runId)

      // A `foundry dev` started with the tool half saved leaves the agent out; the decision comes through it.
      writeFileSync(join(root, toolPath), `import { defineTool } from "foundry"\nexport default defineTool({ description: "half saved",\n`)
      const port = yield* freePort
      const dev = yield* startCli(["dev", root, "--port", String(port)])
      yield* dev.waitFor(/listening on/)
      const decided = yield* http(`http://127.0.0.1:${port}/api/approvals/${approval}`, { body: { decision: "approve" } })
      expect(decided.status, decided.text).toBe(200)
      const waitsForBuild = (events: ReadonlyArray<EventBody>) => events.some((e) => e.type === "run.suspended" && e.data.reason === "build")
      for (let attempt = 0; attempt < 600 && !waitsForBuild(yield* eventsOf(survivor.url, runId)); attempt++) yield* Effect.sleep("25 millis")
      expect(waitsForBuild(yield* eventsOf(survivor.url, runId))).toBe(true)
      // Left to the live `foundry dev` that suspended it, for longer than two of the server's looks.
      yield* Effect.sleep("7 seconds")
      expect(((yield* http(`${survivor.url}/api/runs/${runId}`)).json as RunBody).status).toBe("suspended")
      expect(survivor.server.output()).not.toMatch(/woke/)
      yield* killHard(dev)

      const done = yield* waitForRun(survivor.url, runId, 1200)
      expect(done.status, JSON.stringify(done)).toBe("completed")
      expect(done.output).toBe("the tool said: approved")
      expect(survivor.server.child.exitCode).toBeNull()
      yield* survivor.server.waitFor(/woke 1 suspended run that a process on this store left waiting when it stopped/)
    }), { timeout: 90_000 })
})
