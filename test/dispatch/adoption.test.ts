import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type CliProcess, serveProject, startCli } from "../support/cli.js"
import { durableProject, plan, slowMarkerOf } from "../support/durableProject.js"
import { http, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const lines = (log: string) => existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").filter((l) => l !== "") : []

interface EventBody {
  readonly type: string
}

const eventTypes = (url: string, runId: string) =>
  Effect.map(http(`${url}/api/runs/${runId}/events`), (r) => (r.json as ReadonlyArray<EventBody>).map((e) => e.type))

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
