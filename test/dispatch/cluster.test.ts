/**
 * The cluster dispatcher with real runner processes (`foundry start --runner-port`) on loopback,
 * sharing one fresh PostgreSQL database: order across processes, failover after SIGKILL, schedules
 * that fire once cluster-wide, and approvals and cancels through a process that does not execute
 * the run. What happened is read from the journal (the runs table) and the tools' side-effect log.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type CliProcess, freePort, runCli, startCli } from "../support/cli.js"
import { durableProject, plan, slowMarkerOf } from "../support/durableProject.js"
import { browserPage, skipBrowser } from "../support/browser.js"
import { connect, freshDatabase, skipPostgres } from "../support/postgres.js"
import { runFrames } from "../support/eventFeed.js"
import { http } from "../support/server.js"
import { tempProject, writeFiles } from "../support/tempProject.js"

interface Runner {
  readonly process: CliProcess
  readonly url: string
}

interface RunRow {
  readonly id: string
  readonly conversation_id: string
  readonly input: string
  readonly status: string
  readonly seq: number
  readonly started_at: number | null
  readonly finished_at: number | null
  readonly source: string | null
  readonly error: string | null
}

const lines = (log: string) => existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").filter((l) => l !== "") : []

/** Waits (up to 10 s) until the side-effect log holds `count` lines that `matches` accepts. */
const waitForLines = (log: string, matches: (line: string) => boolean, count: number) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 200 && lines(log).filter(matches).length < count; attempt++) yield* Effect.sleep("50 millis")
    expect(lines(log).filter(matches).length).toBeGreaterThanOrEqual(count)
  })

interface ClusterBody {
  readonly mode: string
  readonly runners: ReadonlyArray<{ readonly healthy: boolean; readonly shards: number }>
}

/** `GET /api/cluster` once the healthy runners report `shards` shards between them (each reports every two seconds). */
const clusterHolding = (runner: Runner, shards: number) =>
  Effect.gen(function*() {
    for (let attempt = 0; ; attempt++) {
      const view = (yield* http(`${runner.url}/api/cluster`)).json as ClusterBody
      const held = view.runners.filter((r) => r.healthy).reduce((sum, r) => sum + r.shards, 0)
      if (held === shards || attempt >= 100) {
        expect(held).toBe(shards)
        return view
      }
      yield* Effect.sleep("100 millis")
    }
  })

/** The tool calls whose results the journal holds now, as `<run id> <tool call id>`. */
const recordedToolCalls = (databaseUrl: string) =>
  Effect.gen(function*() {
    const sql = yield* connect(databaseUrl)
    const rows = yield* sql.unsafe<{ readonly run_id: string; readonly body: string }>("SELECT run_id, body FROM foundry_messages")
    return new Set(rows.flatMap((row) => {
      const message: unknown = JSON.parse(row.body)
      return typeof message === "object" && message !== null && "_tag" in message && message._tag === "tool" && "toolCallId" in message
        ? [`${row.run_id} ${String(message.toolCallId)}`]
        : []
    }))
  }).pipe(Effect.scoped)

/** How many conversation leases the runner process holds now. */
const leasesHeldBy = (databaseUrl: string, runner: Runner) =>
  Effect.gen(function*() {
    const sql = yield* connect(databaseUrl)
    const held = yield* sql.unsafe<{ readonly count: string }>(
      `SELECT COUNT(*) AS count FROM foundry_conversation_leases WHERE owner LIKE '%/${runner.process.child.pid}/%' AND expires_at > ${Date.now()}`
    )
    return Number(held[0]?.count)
  }).pipe(Effect.scoped)

/** A project of the durable tests on `databaseUrl`, with its planned model's delays real. */
const clusterProject = (databaseUrl: string, extra = "") =>
  Effect.gen(function*() {
    const log = join(tmpdir(), `foundry-cluster-${randomUUID()}.log`)
    const root = yield* tempProject(durableProject(log, `{ store: { postgres: ${JSON.stringify(databaseUrl)} }, concurrency: 100${extra} }`, { plannedModelInFile: true }))
    writeFileSync(slowMarkerOf(log), "")
    return { root, log }
  })

/** Starts `count` runners of the project, each with its API port and runner port. */
const startRunners = (root: string, count: number) =>
  Effect.forEach(Array.from({ length: count }), () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const runnerPort = yield* freePort
      const process = yield* startCli(["start", root, "--port", String(port), "--runner-port", String(runnerPort)])
      yield* process.waitFor(/listening on/)
      return { process, url: `http://127.0.0.1:${port}` } satisfies Runner
    }), { concurrency: "unbounded" })

const submit = (runner: Runner, message: string, conversation?: string) =>
  Effect.map(
    http(`${runner.url}/api/runs`, { body: { agent: "worker", message, ...(conversation === undefined ? {} : { conversation }) } }),
    (response) => {
      expect(response.status).toBe(202)
      return response.json as { readonly runId: string; readonly conversationId: string }
    }
  )

/** Polls the journal until `done` holds for its runs, or fails after `timeoutMs`. */
const waitForRuns = (databaseUrl: string, done: (runs: ReadonlyArray<RunRow>) => boolean, timeoutMs: number) =>
  Effect.gen(function*() {
    const sql = yield* connect(databaseUrl)
    const started = Date.now()
    while (true) {
      const runs = yield* sql.unsafe<RunRow>("SELECT id, conversation_id, input, status, seq, started_at, finished_at, source, error FROM foundry_runs")
      if (done(runs)) return runs
      if (Date.now() - started > timeoutMs) {
        const statuses = runs.reduce<Record<string, number>>((counts, run) => ({ ...counts, [run.status]: (counts[run.status] ?? 0) + 1 }), {})
        return yield* Effect.die(new Error(`the runs did not get there within ${timeoutMs} ms: ${JSON.stringify(statuses)}`))
      }
      yield* Effect.sleep("100 millis")
    }
  }).pipe(Effect.scoped)

const allEnded = (count: number) => (runs: ReadonlyArray<RunRow>) =>
  runs.length >= count && runs.every((run) => run.status === "completed" || run.status === "failed" || run.status === "cancelled")

/** A runner that does not own the conversation now (each runner names its own address in `GET /api/cluster`). */
const notTheOwner = (runners: ReadonlyArray<Runner>, conversationId: string) =>
  Effect.gen(function*() {
    const placement = yield* http(`${runners[0]!.url}/api/cluster/conversations/${conversationId}`)
    const owner = (placement.json as { readonly runner: string | null }).runner
    expect(owner).not.toBeNull()
    const selves = yield* Effect.forEach(runners, (runner) =>
      Effect.map(http(`${runner.url}/api/cluster`), (response) => ({ runner, self: (response.json as { readonly self: string }).self })))
    expect(selves.filter((r) => r.self === owner)).toHaveLength(1)
    return selves.find((r) => r.self !== owner)!.runner
  })

describe.skipIf(skipPostgres)("the cluster dispatcher (runner processes on PostgreSQL)", () => {
  it.scopedLive("runs of 200 conversations posted round-robin to three runners execute in acceptance order, never overlapping", () =>
    Effect.gen(function*() {
      const databaseUrl = yield* freshDatabase
      const { root } = yield* clusterProject(databaseUrl)
      const runners = yield* startRunners(root, 3)
      // Message 1 is slow, so that messages 2 and 3 arrive, through the two other runners, while it runs.
      const first = plan({ delay: 400, calls: [{ name: "record", arguments: { line: "m1" } }] })
      const conversations = yield* Effect.forEach(Array.from({ length: 200 }, (_, i) => i), (i) =>
        Effect.gen(function*() {
          const one = yield* submit(runners[i % 3]!, first)
          yield* submit(runners[(i + 1) % 3]!, plan({ calls: [{ name: "record", arguments: { line: "m2" } }] }), one.conversationId)
          yield* submit(runners[(i + 2) % 3]!, plan({ calls: [{ name: "record", arguments: { line: "m3" } }] }), one.conversationId)
          return one.conversationId
        }), { concurrency: 20 })

      const runs = yield* waitForRuns(databaseUrl, allEnded(600), 120_000)
      for (const conversation of conversations) {
        const ordered = runs.filter((run) => run.conversation_id === conversation).sort((a, b) => Number(a.seq) - Number(b.seq))
        expect(ordered.map((run) => JSON.parse(run.input).calls[0].arguments.line)).toEqual(["m1", "m2", "m3"])
        expect(ordered.map((run) => run.status), ordered.map((run) => run.error ?? "").join(" | ")).toEqual(["completed", "completed", "completed"])
        for (let k = 1; k < ordered.length; k++) {
          expect(Number(ordered[k]!.started_at)).toBeGreaterThanOrEqual(Number(ordered[k - 1]!.finished_at))
        }
      }
      // The three runners share the shards.
      const view = yield* clusterHolding(runners[1]!, 300)
      expect(view.mode).toBe("cluster")
      expect(view.runners.map((r) => r.healthy)).toEqual([true, true, true])
      expect(view.runners.every((r) => r.shards > 0)).toBe(true)
    }), 240_000)

  it.scopedLive("SIGKILL of a runner: its runs, executing and queued, complete on the survivors within 15 s; no recorded call runs twice", () =>
    Effect.gen(function*() {
      const databaseUrl = yield* freshDatabase
      const { root, log } = yield* clusterProject(databaseUrl)
      const runners = yield* startRunners(root, 3)
      // Each first run records a line (journaled), then works slowly: killed mid-tool. The second waits behind it.
      const firsts = yield* Effect.forEach(Array.from({ length: 30 }, (_, i) => i), (i) =>
        Effect.gen(function*() {
          const one = yield* submit(runners[i % 3]!, plan({ calls: [{ name: "record", arguments: { line: `first ${i}` } }, { name: "slow", arguments: { ms: 2000 } }] }))
          yield* submit(runners[(i + 1) % 3]!, plan({ calls: [{ name: "record", arguments: { line: `second ${i}` } }] }), one.conversationId)
          return one
        }), { concurrency: 10 })
      // Wait until every first run is inside its slow call, then kill the runner that holds the most
      // of them: on a loaded machine the runs do not all start together, and a runner may be done
      // with its own by the time the last one starts.
      yield* waitForLines(log, (l) => l.includes(" start "), firsts.length)
      const held = yield* Effect.forEach(runners, (runner) => leasesHeldBy(databaseUrl, runner))
      const most = held.indexOf(Math.max(...held))
      expect(held[most]).toBeGreaterThan(0)
      const victim = runners[most]!
      const survivor = runners[(most + 1) % runners.length]!
      victim.process.child.kill("SIGKILL")
      const killedAt = Date.now()
      const recordedAtKill = yield* recordedToolCalls(databaseUrl)

      const runs = yield* waitForRuns(databaseUrl, allEnded(60), 15_000)
      const tookOver = Date.now() - killedAt
      expect(runs.every((run) => run.status === "completed")).toBe(true)
      expect(tookOver).toBeLessThan(15_000)
      // Every run made its record call; a call whose result the journal held at the kill ran once.
      // (A call the killed runner had made but not yet recorded runs again: at least once.)
      const recorded = lines(log).filter((l) => l.includes(" first ") || l.includes(" second "))
      const calls = recorded.map((l) => l.split(" ").slice(0, 2).join(" "))
      expect(new Set(recorded.map((l) => l.split(" ").slice(0, 2).join(" "))).size).toBe(60)
      const twice = calls.filter((call, i) => recordedAtKill.has(call) && calls.indexOf(call) !== i)
      expect(twice, `recorded before the kill, yet run again: ${twice.join(", ")}`).toEqual([])
      expect(recordedAtKill.size).toBeGreaterThanOrEqual(30)
      // The survivors come to hold every shard.
      yield* clusterHolding(survivor, 300)
    }), 120_000)

  it.scopedLive("a schedule firing every second on three runners fires once per tick, across a runner kill", () =>
    Effect.gen(function*() {
      const databaseUrl = yield* freshDatabase
      const { root } = yield* clusterProject(databaseUrl, `, schedules: { misfireGrace: "30 seconds" }`)
      writeFiles(root, {
        "schedules/tick.ts": `import { defineSchedule } from "foundry"
import worker from "../agents/worker/agent.js"
export default defineSchedule({ every: "1 second", agent: worker, message: ${JSON.stringify(plan({}))}, overlap: "allow" })
`
      })
      const runners = yield* startRunners(root, 3)
      yield* Effect.sleep("4 seconds")
      runners[0]!.process.child.kill("SIGKILL")
      const killedAt = Date.now()
      yield* Effect.sleep("12 seconds")
      const runs = yield* waitForRuns(databaseUrl, () => true, 1000)
      const firings = runs.filter((run) => run.source !== null).map((run) => String(JSON.parse(run.source ?? "{}").scheduledFor))
      // Once per tick: no firing time twice, though three runners could each have fired it.
      expect(new Set(firings).size).toBe(firings.length)
      expect(firings.length).toBeGreaterThanOrEqual(8)
      // And the ticks go on after the kill.
      expect(firings.filter((time) => Date.parse(time) > killedAt + 8000).length).toBeGreaterThan(0)
    }), 90_000)

  it.scopedLive("an approval decided, and a cancel sent, through a runner that does not execute the run reach it", () =>
    Effect.gen(function*() {
      const databaseUrl = yield* freshDatabase
      const { root, log } = yield* clusterProject(databaseUrl)
      const runners = yield* startRunners(root, 3)

      const asking = yield* submit(runners[0]!, plan({ calls: [{ name: "transfer", arguments: { amount: 7 } }] }))
      let approvalId: string | undefined
      for (let attempt = 0; attempt < 200 && approvalId === undefined; attempt++) {
        const pending = yield* http(`${runners[1]!.url}/api/approvals?status=pending`)
        approvalId = (pending.json as ReadonlyArray<{ readonly id: string; readonly runId: string }>).find((a) => a.runId === asking.runId)?.id
        if (approvalId === undefined) yield* Effect.sleep("50 millis")
      }
      const decidedThrough = yield* notTheOwner(runners, asking.conversationId)
      const decided = yield* http(`${decidedThrough.url}/api/approvals/${approvalId}`, { body: { decision: "approve" } })
      expect(decided.status).toBe(200)
      yield* waitForRuns(databaseUrl, (runs) => runs.some((run) => run.id === asking.runId && run.status === "completed"), 15_000)
      expect(lines(log).some((l) => l.startsWith(`${asking.runId} transfer 7`))).toBe(true)

      const slow = yield* submit(runners[1]!, plan({ calls: [{ name: "slow", arguments: { ms: 30_000 } }] }))
      yield* waitForLines(log, (l) => l.startsWith(`${slow.runId} start`), 1)
      const through = yield* notTheOwner(runners, slow.conversationId)
      const response = yield* http(`${through.url}/api/runs/${slow.runId}/cancel`, { method: "POST" })
      expect(response.status).toBe(200)
      yield* waitForRuns(databaseUrl, (runs) => runs.some((run) => run.id === slow.runId && run.status === "cancelled"), 5000)
      // The executing fiber was interrupted where it ran: the slow call never finished.
      yield* Effect.sleep("500 millis")
      expect(lines(log).some((l) => l.startsWith(`${slow.runId} end`))).toBe(false)
    }), 90_000)

  it.scopedLive("a run's event stream through another runner follows it to its end; a runner stopped with SIGTERM hands its runs over", () =>
    Effect.gen(function*() {
      const databaseUrl = yield* freshDatabase
      const { root, log } = yield* clusterProject(databaseUrl)
      const runners = yield* startRunners(root, 3)

      const say = "one two three four five six seven eight"
      const followed = yield* submit(runners[0]!, plan({ delay: 1000, calls: [{ name: "record", arguments: { line: "followed" } }], say, wordDelay: 150 }))
      const through = yield* notTheOwner(runners, followed.conversationId)
      const frames = yield* runFrames(through.url, followed.runId)
      const types = frames.map((frame) => frame.type)
      expect(types).toContain("tool.call.completed")
      expect(types[types.length - 1]).toBe("run.completed")
      // The answer's text as the owner's model writes it, word by word, between its turn's start and end.
      const deltas = frames.filter((frame) => frame.type === "model.delta")
      expect(deltas.map((frame) => frame.data.text).join("")).toBe(say)
      expect(deltas.every((frame) => frame.data.turn === 2)).toBe(true)
      expect(deltas[deltas.length - 1]!.at - deltas[0]!.at).toBeGreaterThanOrEqual(500)
      const turn = (type: string) => frames.findIndex((frame) => frame.type === type && frame.data.turn === 2)
      expect(types.indexOf("model.delta")).toBeGreaterThan(turn("model.turn.started"))
      expect(types.lastIndexOf("model.delta")).toBeLessThan(turn("model.turn.completed"))

      // A clean stop: the runs it executes are interrupted, not failed, and finish on the others.
      const runs = yield* Effect.forEach(Array.from({ length: 12 }, (_, i) => i), (i) =>
        submit(runners[i % 3]!, plan({ calls: [{ name: "record", arguments: { line: `handed ${i}` } }, { name: "slow", arguments: { ms: 1500 } }] })))
      yield* waitForLines(log, (l) => l.includes(" start "), runs.length)
      // The runner executing the most of them (the runs' conversations fall on the runners by their
      // shards: one runner may own none of the twelve).
      const holding = yield* Effect.forEach(runners, (runner) => Effect.map(leasesHeldBy(databaseUrl, runner), (leases) => ({ runner, leases })))
      const { leases, runner: stopping } = holding.reduce((most, next) => next.leases > most.leases ? next : most)
      expect(leases).toBeGreaterThan(0)
      stopping.process.child.kill("SIGTERM")
      const finished = yield* waitForRuns(databaseUrl, (all) => runs.every((run) => all.some((r) => r.id === run.runId && r.status === "completed")), 20_000)
      expect(finished.filter((run) => run.status === "failed")).toEqual([])
      const handed = lines(log).filter((l) => l.includes(" handed "))
      expect(new Set(handed.map((l) => l.split(" ").slice(0, 2).join(" "))).size).toBe(handed.length)
    }), 90_000)

  it.scopedLive.skipIf(skipBrowser)("the inspector shows the runners, and the runner a conversation lives on", () =>
    Effect.gen(function*() {
      const databaseUrl = yield* freshDatabase
      const { root } = yield* clusterProject(databaseUrl)
      const runners = yield* startRunners(root, 2)
      const run = yield* submit(runners[0]!, plan({}))
      yield* waitForRuns(databaseUrl, allEnded(1), 10_000)
      const placement = yield* http(`${runners[1]!.url}/api/cluster/conversations/${run.conversationId}`)
      const owner = (placement.json as { readonly runner: string }).runner
      // Both runners have reported at least once.
      yield* Effect.sleep("2500 millis")

      const page = yield* browserPage
      yield* Effect.promise(() => page.goto(`${runners[1]!.url}/`))
      yield* Effect.promise(() => page.waitForSelector("[data-testid=runners] li >> nth=1"))
      const rows = yield* Effect.promise(() => page.$$eval("[data-testid=runners] li", (items) => items.map((item) => item.textContent ?? "")))
      expect(rows).toHaveLength(2)
      for (const row of rows) expect(row).toMatch(/live .*shards? of 300/)
      yield* Effect.promise(() => page.goto(`${runners[1]!.url}/conversations/${run.conversationId}`))
      yield* Effect.promise(() => page.waitForSelector(`[data-testid=conversation-usage] >> text=runner ${owner}`))
    }), 60_000)

  it.scopedLive("a runner refuses to listen beyond loopback unless the network is declared private, and a cluster on SQLite is refused", () =>
    Effect.gen(function*() {
      const databaseUrl = yield* freshDatabase
      const { root } = yield* clusterProject(databaseUrl)
      const exposed = yield* runCli(["start", root, "--port", "0", "--runner-host", "0.0.0.0"])
      expect(exposed.code).toBe(1)
      expect(exposed.stderr).toContain("refusing to listen for other runners on 0.0.0.0")
      expect(exposed.stderr).toContain("trustedNetwork")

      const onSqlite = yield* tempProject(durableProject(join(tmpdir(), `foundry-cluster-${randomUUID()}.log`)))
      const refused = yield* runCli(["start", onSqlite, "--port", "0", "--cluster"])
      expect(refused.code).toBe(1)
      expect(refused.stderr).toContain("a cluster needs a PostgreSQL store")
    }), 60_000)
})
