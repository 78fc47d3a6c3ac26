/**
 * A store that does not take a run's step for a while: the step is taken again once it answers,
 * the run going on from what the store holds (as after a restart), instead of failing. On
 * PostgreSQL the test's database is taken away (its connections ended, new ones refused) while a
 * tool call runs, and given back after the call has ended; on SQLite another process holds the
 * write lock past the busy timeout.
 */
import { spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { createRequire } from "node:module"
import { existsSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { durableProject, durableProjectOnPostgres, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { connect, postgresUrl, skipPostgres } from "../support/postgres.js"
import { http, startServer, startServerOnItsStore, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const sqliteModule = createRequire(import.meta.url).resolve("better-sqlite3")

const lines = (log: string) => existsSync(log) ? readFileSync(log, "utf8").split("\n").filter((l) => l !== "") : []

/**
 * Takes `database` away for `millis`: its connections ended and new ones refused, as while its
 * server restarts or fails over; then lets connections in again.
 */
const outage = (database: string, millis: number) =>
  Effect.gen(function*() {
    const sql = yield* connect(postgresUrl)
    const away = Effect.gen(function*() {
      yield* sql.unsafe(`ALTER DATABASE ${database} WITH ALLOW_CONNECTIONS false`)
      const cut = yield* sql<{ readonly cut: boolean }>`
        SELECT pg_terminate_backend(pid) AS cut FROM pg_stat_activity WHERE datname = ${database} AND pid <> pg_backend_pid()`
      yield* Effect.sleep(millis)
      return cut.length
    })
    // Given back however the wait ends: a test cut short must not leave the database locked.
    return yield* Effect.ensuring(away, Effect.orDie(sql.unsafe(`ALTER DATABASE ${database} WITH ALLOW_CONNECTIONS true`)))
  }).pipe(Effect.scoped)

describe.skipIf(skipPostgres)("a run whose store drops its connections", () => {
  it.scopedLive("waits for the store and completes; the call it had recorded does not run again", () =>
    Effect.gen(function*() {
      const { log, root, url } = yield* durableProjectOnPostgres()
      const server = yield* startServerOnItsStore(root, plannedModel)
      const created = yield* http(`${server}/api/runs`, {
        body: {
          agent: "worker",
          message: plan({ calls: [{ name: "record", arguments: { line: "recorded" } }, { name: "slow", arguments: { ms: 1000 } }] })
        }
      })
      expect(created.status).toBe(202)
      const { runId } = created.json as { readonly runId: string }
      // The recorded call's result is committed before the slow call starts: cut while it sleeps.
      for (let i = 0; i < 200 && !lines(log).some((l) => l.startsWith(`${runId} start `)); i++) yield* Effect.sleep("20 millis")
      // Down from before the slow call ends until well after: its result meets no store.
      expect(yield* outage(new URL(url).pathname.slice(1), 2500)).toBeGreaterThan(0)

      const run = yield* waitForRun(server, runId)
      expect(run).toMatchObject({ status: "completed" })
      expect(lines(log).filter((l) => l.endsWith(" recorded"))).toHaveLength(1)
      const events = (yield* http(`${server}/api/runs/${runId}/events`)).json as ReadonlyArray<{ readonly type: string }>
      const types = events.map((e) => e.type)
      // Taken up again from what the store held: the slow call's result had not been recorded.
      expect(types).toContain("run.resumed")
      expect(types.filter((t) => t === "tool.call.completed")).toHaveLength(2)
      expect(types.at(-1)).toBe("run.completed")
    }), 60_000)
})

describe("a run whose SQLite store is locked by another process", () => {
  it.scopedLive("waits for the lock, the process going on meanwhile, and completes", () =>
    Effect.gen(function*() {
      const log = join(tmpdir(), `foundry-locked-${randomUUID()}.log`)
      const root = yield* tempProject(durableProject(log))
      const server = yield* startServer(root, { model: plannedModel })
      const created = yield* http(`${server.url}/api/runs`, {
        // Long enough for the lock's holder (a Node process) to start before it ends, also on a busy machine.
        body: { agent: "worker", message: plan({ calls: [{ name: "slow", arguments: { ms: 3000 } }] }) }
      })
      const { runId } = created.json as { readonly runId: string }
      for (let i = 0; i < 200 && !lines(log).some((l) => l.startsWith(`${runId} start `)); i++) yield* Effect.sleep("20 millis")
      // Another process takes the write lock before the slow call ends, and holds it past the 5 s a
      // write waits for it after that (the call's 3 s, then 6.5 s): the slow call's result meets the
      // lock, and the run waits it out.
      const holder = spawn(process.execPath, [
        "-e",
        `const db = require(${JSON.stringify(sqliteModule)})(${JSON.stringify(server.storeFile)}); db.exec("BEGIN IMMEDIATE"); ` +
        `console.log("locked"); setTimeout(() => { db.exec("COMMIT"); db.close() }, 9500)`
      ])
      yield* Effect.addFinalizer(() => Effect.sync(() => holder.kill("SIGKILL")))
      yield* Effect.async<void>((resume) => void holder.stdout.once("data", () => resume(Effect.void)))
      // The server runs in this process: while its write waits for the lock, this thread is not
      // held up (a busy wait inside SQLite would stop every timer here for the whole 5 s).
      let longestGap = 0
      let last = performance.now()
      const ticks = setInterval(() => {
        const now = performance.now()
        longestGap = Math.max(longestGap, now - last)
        last = now
      }, 20)
      yield* Effect.addFinalizer(() => Effect.sync(() => clearInterval(ticks)))
      // A store outage is waited out for longer than the default polling waits.
      const run = yield* waitForRun(server.url, runId, 1200)
      clearInterval(ticks)
      expect(run).toMatchObject({ status: "completed" })
      expect(longestGap).toBeLessThan(2000)
      const events = (yield* http(`${server.url}/api/runs/${runId}/events`)).json as ReadonlyArray<{ readonly type: string }>
      expect(events.map((e) => e.type)).toContain("run.resumed")
    }), 60_000)
})
