/**
 * `machine`: how fast this machine is at this moment, so that figures from different days can be
 * compared. The same 2-core machine has run the same code 1.5-2.5 times as fast on one day as on
 * another (docs/performance.md), which hides a regression of 20% between rows measured apart.
 *
 * Three fixed pieces of work of the kinds a run is made of, each timed in CPU (the least of five
 * tries, after two that let the JIT compile it): Effect's fiber runtime (generators, a fiber
 * reference, a fork and join), plain JavaScript (building, stringifying and parsing event-like
 * objects), and SQLite through better-sqlite3 on a database in memory (inserts in transactions,
 * reads by key). And what one synced commit costs on the disk under the store's folder: a SQLite
 * transaction of one small insert in WAL mode with `synchronous = FULL`, as the store commits a
 * step, whose p50 bounds the overhead per turn of a run made alone from below.
 */
import { availableParallelism, cpus } from "node:os"
import { join } from "node:path"
import Sqlite from "better-sqlite3"
import { Effect, FiberRef } from "effect"
import { tempProject } from "../support/project.js"
import { progress } from "../support/runtime.js"
import { cpuMsSince, percentile, round } from "../support/stats.js"

const tries = 5
const warmUps = 2
const syncedCommits = 300

/** The least CPU milliseconds `work` took over `tries` tries, after `warmUps` untimed ones. */
const leastCpuMs = (work: () => void): number => {
  for (let i = 0; i < warmUps; i++) work()
  let least = Number.POSITIVE_INFINITY
  for (let i = 0; i < tries; i++) {
    const started = process.cpuUsage()
    work()
    least = Math.min(least, cpuMsSince(started))
  }
  return least
}

const step = FiberRef.unsafeMake(0)

/** 20,000 small programs of about ten operations each, one forked and joined per ten. */
const effectWork = () =>
  Effect.runSync(Effect.forEach(Array.from({ length: 20_000 }, (_, i) => i), (i) =>
    Effect.gen(function*() {
      const before = yield* FiberRef.get(step)
      yield* FiberRef.set(step, before + 1)
      const doubled = yield* Effect.map(Effect.succeed(i), (n) => n * 2)
      const forked = i % 10 === 0 ? yield* Effect.fork(Effect.sync(() => doubled + 1)) : undefined
      if (forked !== undefined) yield* forked.await
      return yield* Effect.sync(() => doubled + before)
    }), { discard: true }))

/** 20,000 event-like objects built, stringified and parsed back. */
const javascriptWork = () => {
  let length = 0
  for (let i = 0; i < 20_000; i++) {
    const event = {
      id: `evt_${i.toString(36)}`,
      type: i % 2 === 0 ? "tool.called" : "model.turn.completed",
      runId: `run_${(i >> 3).toString(36)}`,
      time: 1_700_000_000_000 + i,
      data: { turn: i % 7, input: { id: String(i) }, text: "Order 42 ships on Tuesday." }
    }
    const parsed: unknown = JSON.parse(JSON.stringify(event))
    if (typeof parsed === "object" && parsed !== null) length += Object.keys(parsed).length
  }
  return length
}

/** 10,000 rows inserted in transactions of ten, and each read back by its key, in memory. */
const sqliteWork = () => {
  const db = new Sqlite(":memory:")
  try {
    db.exec("CREATE TABLE events (seq INTEGER PRIMARY KEY, run_id TEXT NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL)")
    const insert = db.prepare("INSERT INTO events (run_id, type, data) VALUES (?, ?, ?)")
    const read = db.prepare("SELECT * FROM events WHERE seq = ?")
    const ten = db.transaction((from: number) => {
      for (let i = from; i < from + 10; i++) insert.run(`run_${i >> 3}`, "tool.called", `{"turn":${i % 7}}`)
    })
    for (let i = 0; i < 10_000; i += 10) ten(i)
    for (let seq = 1; seq <= 10_000; seq++) read.get(seq)
  } finally {
    db.close()
  }
}

/** Wall milliseconds of each of `syncedCommits` synced commits of one small insert, in `folder`. */
const syncedCommitTimes = (folder: string): ReadonlyArray<number> => {
  const db = new Sqlite(join(folder, "sync.db"))
  try {
    db.pragma("journal_mode = WAL")
    db.pragma("synchronous = FULL")
    db.exec("CREATE TABLE steps (seq INTEGER PRIMARY KEY, data TEXT NOT NULL)")
    const insert = db.prepare("INSERT INTO steps (data) VALUES (?)")
    return Array.from({ length: syncedCommits }, (_, i) => {
      const started = performance.now()
      insert.run(`{"step":${i}}`)
      return performance.now() - started
    })
  } finally {
    db.close()
  }
}

export const machine = Effect.gen(function*() {
  yield* progress("machine: reference work and synced commits")
  const folder = yield* tempProject({})
  const effectMs = leastCpuMs(effectWork)
  const javascriptMs = leastCpuMs(javascriptWork)
  const sqliteMs = leastCpuMs(sqliteWork)
  const commits = syncedCommitTimes(folder)
  return {
    scenario: "machine",
    cores: availableParallelism(),
    cpu: cpus()[0]?.model ?? "unknown",
    node: process.version,
    referenceCpuMs: {
      effect: round(effectMs, 1),
      javascript: round(javascriptMs, 1),
      sqlite: round(sqliteMs, 1),
      total: round(effectMs + javascriptMs + sqliteMs, 1)
    },
    syncedCommitMs: { p50: round(percentile(commits, 50), 3), p90: round(percentile(commits, 90), 3) }
  }
}).pipe(Effect.scoped)
