import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, TestClock } from "effect"
import * as SqliteDatabase from "../../src/durable/SqliteDatabase.js"
import { durableProject, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { connect, freshDatabase, holdLocks, skipPostgres, someoneWaitsForALock } from "../support/postgres.js"
import { http, startServer, startServerOnItsStore } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"
import { until } from "../support/until.js"

/** Real waiting, for HTTP and fibers, while the Effect clock is the test clock. */
const realSleep = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

const scheduleFile = (body: string) => `import { defineSchedule } from "foundry"
import worker from "../agents/worker/agent.js"
export default defineSchedule({ agent: worker, message: ${JSON.stringify(plan({}))}, ${body} })
`

const project = (schedules: Record<string, string>) => ({
  ...durableProject(join(tmpdir(), "unused.log")),
  ...Object.fromEntries(Object.entries(schedules).map(([name, body]) => [`schedules/${name}.ts`, scheduleFile(body)]))
})

interface RunBody {
  readonly id: string
  readonly status: string
  readonly source?: { readonly schedule: string; readonly scheduledFor: string }
}

/** The scheduled times of a schedule's runs, oldest first, once `count` of them exist. */
const firings = (url: string, schedule: string, count: number) =>
  Effect.gen(function*() {
    let times: Array<string> = []
    for (let attempt = 0; attempt < 200; attempt++) {
      const runs = (yield* http(`${url}/api/runs?limit=1000`)).json as Array<RunBody>
      times = runs.filter((r) => r.source?.schedule === schedule).map((r) => r.source!.scheduledFor).sort()
      if (times.length >= count) break
      yield* realSleep(20)
    }
    return times
  })

const at = (iso: string) => TestClock.setTime(Date.parse(iso))

/** A server whose schedule `busy` fires every minute a run of an hour, with `overlap`. */
const busyEveryMinute = (overlap: "skip" | "queue") =>
  Effect.gen(function*() {
    const root = yield* tempProject({
      ...durableProject(join(tmpdir(), "unused.log")),
      "schedules/busy.ts": `import { defineSchedule } from "foundry"
import worker from "../agents/worker/agent.js"
export default defineSchedule({
  agent: worker,
  every: "1 minute",
  overlap: "${overlap}",
  message: ${JSON.stringify(plan({ calls: [{ name: "slow", arguments: { ms: 3_600_000 } }] }))}
})
`
    })
    return yield* startServer(root, { model: plannedModel })
  })

describe("schedules (on the test clock)", () => {
  it.scoped("cron in a time zone fires at the right local time across a daylight-saving change", () =>
    Effect.gen(function*() {
      yield* at("2026-03-27T00:00:00Z")
      const root = yield* tempProject(project({ morning: `cron: "0 9 * * *", timezone: "Europe/Berlin"` }))
      const server = yield* startServer(root, { model: plannedModel })
      for (let day = 0; day < 4; day++) {
        yield* TestClock.adjust("1 day")
        yield* realSleep(50)
      }
      // 09:00 in Berlin is 08:00 UTC before the change (CET) and 07:00 UTC after it (CEST).
      expect(yield* firings(server.url, "morning", 4)).toEqual([
        "2026-03-27T08:00:00.000Z",
        "2026-03-28T08:00:00.000Z",
        "2026-03-29T07:00:00.000Z",
        "2026-03-30T07:00:00.000Z"
      ])
      const listed = (yield* http(`${server.url}/api/schedules`)).json as Array<{ id: string; nextFire: number; lastFire: number }>
      expect(listed[0]).toMatchObject({ id: "morning", lastFire: Date.parse("2026-03-30T07:00:00Z"), nextFire: Date.parse("2026-03-31T07:00:00Z") })
    }))

  it.scoped("an hourly cron in a time zone fires in both runs of the hour the autumn change repeats", () =>
    Effect.gen(function*() {
      yield* at("2026-10-24T23:30:00Z")
      const root = yield* tempProject(project({ hourly: `cron: "0 * * * *", timezone: "Europe/Berlin"` }))
      const server = yield* startServer(root, { model: plannedModel })
      for (let hour = 0; hour < 3; hour++) {
        yield* TestClock.adjust("1 hour")
        yield* realSleep(80)
      }
      // 02:00 CEST, 02:00 CET (the clock went back from 03:00 CEST), 03:00 CET.
      expect(yield* firings(server.url, "hourly", 3)).toEqual([
        "2026-10-25T00:00:00.000Z",
        "2026-10-25T01:00:00.000Z",
        "2026-10-25T02:00:00.000Z"
      ])
    }))

  it.scoped("every and at", () =>
    Effect.gen(function*() {
      yield* at("2026-06-01T12:00:00Z")
      const root = yield* tempProject(project({ hourly: `every: "1 hour"`, once: `at: "2026-06-01T12:30:00Z"` }))
      const server = yield* startServer(root, { model: plannedModel })
      for (let hour = 0; hour < 3; hour++) {
        yield* TestClock.adjust("1 hour")
        yield* realSleep(50)
      }
      expect(yield* firings(server.url, "hourly", 3)).toEqual([
        "2026-06-01T13:00:00.000Z",
        "2026-06-01T14:00:00.000Z",
        "2026-06-01T15:00:00.000Z"
      ])
      expect(yield* firings(server.url, "once", 1)).toEqual(["2026-06-01T12:30:00.000Z"])
      const listed = (yield* http(`${server.url}/api/schedules`)).json as Array<{ id: string; status: string; nextFire: number | null }>
      expect(listed.find((s) => s.id === "once")).toMatchObject({ status: "done", nextFire: null })
    }))

  it.scoped("an at schedule past its time when armed or resumed is done, and says why", () =>
    Effect.gen(function*() {
      yield* at("2026-06-01T12:00:00Z")
      const root = yield* tempProject(project({
        bygone: `at: "2026-06-01T11:00:00Z"`,
        held: `at: "2026-06-01T13:00:00Z"`,
        once: `at: "2026-06-01T12:30:00Z"`
      }))
      const server = yield* startServer(root, { model: plannedModel })
      type Listed = { id: string; status: string; reason: string | null; nextFire: number | null }
      const listed = (id: string) =>
        Effect.map(http(`${server.url}/api/schedules`), (response) => (response.json as Array<Listed>).find((s) => s.id === id))
      expect(yield* listed("bygone")).toMatchObject({
        status: "done",
        nextFire: null,
        reason: expect.stringContaining("2026-06-01T11:00:00Z, had passed when it was armed")
      })
      expect(yield* listed("held")).toMatchObject({ status: "active", reason: null, nextFire: Date.parse("2026-06-01T13:00:00Z") })
      expect((yield* http(`${server.url}/api/schedules/held/pause`, { method: "POST" })).json).toMatchObject({ status: "paused", reason: null })
      yield* TestClock.adjust("2 hours")
      yield* realSleep(100)
      // Resumed after its time, it has nothing left to wait for.
      expect((yield* http(`${server.url}/api/schedules/held/resume`, { method: "POST" })).json).toMatchObject({
        status: "done",
        nextFire: null,
        reason: expect.stringContaining("had passed when it was armed or resumed")
      })
      expect(yield* listed("once")).toMatchObject({ status: "done", reason: "its one time, 2026-06-01T12:30:00Z, has come" })
      expect(yield* firings(server.url, "once", 1)).toEqual(["2026-06-01T12:30:00.000Z"])
      // A done schedule has nothing to pause or resume: a 409 says so (it answered 200 and changed nothing).
      for (const action of ["pause", "resume"]) {
        const refused = yield* http(`${server.url}/api/schedules/held/${action}`, { method: "POST" })
        expect(refused.status).toBe(409)
        expect(refused.json).toMatchObject({
          _tag: "ScheduleDone",
          message: expect.stringContaining(`schedule "held" is done (its one time, 2026-06-01T13:00:00Z, had passed`)
        })
        expect(refused.text).toContain(`nothing to ${action}`)
      }
      // Run now starts a run of a done schedule; its reason no longer claims it never fired.
      expect((yield* http(`${server.url}/api/schedules/once/trigger`, { method: "POST" })).status).toBe(200)
      expect(yield* listed("once")).toMatchObject({
        status: "done",
        reason: "its one time, 2026-06-01T12:30:00Z, has passed; Run now started its last run, at 2026-06-01T14:00:00.000Z"
      })
      expect(yield* firings(server.url, "bygone", 0)).toEqual([])
      expect(yield* firings(server.url, "held", 0)).toEqual([])
    }))

  it.scoped("a build of sources (foundry dev) writes its own schedules, whatever release was deployed to its store", () =>
    Effect.gen(function*() {
      const storeFile = join(mkdtempSync(join(tmpdir(), "foundry-sched-")), "foundry.db")
      const scheduleIds = (url: string) => Effect.map(http(`${url}/api/schedules`), (r) => (r.json as Array<{ id: string }>).map(({ id }) => id))
      yield* Effect.scoped(Effect.gen(function*() {
        const first = yield* startServer(yield* tempProject(project({ morning: `cron: "0 9 * * *"` })), { model: plannedModel, storeFile })
        expect(yield* scheduleIds(first.url)).toEqual(["morning"])
      }))
      // Meanwhile a release was deployed to the store (a `foundry start` beside it, on the same store).
      yield* Effect.scoped(Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql`INSERT INTO foundry_release_current (name, release_id, updated_at) VALUES ('current', 'rel_000000000000', 0)`).pipe(
          Effect.provide(SqliteDatabase.layer(storeFile).pipe(Layer.provide(NodeContext.layer)))
        ))
      const second = yield* startServer(yield* tempProject(project({ evening: `cron: "0 18 * * *"` })), { model: plannedModel, storeFile })
      expect(yield* scheduleIds(second.url)).toEqual(["evening"])
    }))

  it.scoped("after downtime each misfire policy does what it says, and nothing fires twice after a restart", () =>
    Effect.gen(function*() {
      yield* at("2026-05-04T00:00:00Z")
      const storeFile = join(mkdtempSync(join(tmpdir(), "foundry-sched-")), "foundry.db")
      const root = yield* tempProject(project({
        skipper: `cron: "0 9 * * *", misfire: "skip"`,
        once: `cron: "0 9 * * *", misfire: "run-once"`,
        catcher: `cron: "0 9 * * *", misfire: "catch-up"`
      }))
      // Armed, then the process stops before the first firing.
      yield* Effect.scoped(startServer(root, { model: plannedModel, storeFile }))
      // Three and a bit days later it starts again: four 09:00 firings were missed.
      yield* at("2026-05-07T10:00:00Z")
      const server = yield* startServer(root, { model: plannedModel, storeFile })
      yield* TestClock.adjust("1 second")
      yield* realSleep(100)
      expect(yield* firings(server.url, "catcher", 4)).toEqual([
        "2026-05-04T09:00:00.000Z",
        "2026-05-05T09:00:00.000Z",
        "2026-05-06T09:00:00.000Z",
        "2026-05-07T09:00:00.000Z"
      ])
      expect(yield* firings(server.url, "once", 1)).toEqual(["2026-05-07T09:00:00.000Z"])
      expect(yield* firings(server.url, "skipper", 0)).toEqual([])
      // The next firing is armed once, from the store, for each.
      yield* TestClock.adjust("1 day")
      yield* realSleep(100)
      expect((yield* firings(server.url, "skipper", 1)).at(-1)).toBe("2026-05-08T09:00:00.000Z")
      expect(yield* firings(server.url, "once", 2)).toEqual(["2026-05-07T09:00:00.000Z", "2026-05-08T09:00:00.000Z"])
      expect(yield* firings(server.url, "catcher", 5)).toHaveLength(5)
    }))

  it.scoped("after more than a thousand missed firings, run-once fires the latest and catch-up the latest ten", () =>
    Effect.gen(function*() {
      yield* at("2026-05-04T00:00:30Z")
      const storeFile = join(mkdtempSync(join(tmpdir(), "foundry-sched-")), "foundry.db")
      const root = yield* tempProject(project({
        once: `cron: "* * * * *", misfire: "run-once"`,
        catcher: `cron: "* * * * *", misfire: "catch-up"`
      }))
      yield* Effect.scoped(startServer(root, { model: plannedModel, storeFile }))
      // Down for 2,000 minutes: every minute's firing missed.
      yield* at("2026-05-05T09:20:30Z")
      const server = yield* startServer(root, { model: plannedModel, storeFile })
      yield* TestClock.adjust("1 second")
      yield* realSleep(100)
      expect(yield* firings(server.url, "once", 1)).toEqual(["2026-05-05T09:20:00.000Z"])
      const minutes = Array.from({ length: 10 }, (_, index) => new Date(Date.parse("2026-05-05T09:11:00Z") + index * 60_000).toISOString())
      expect(yield* firings(server.url, "catcher", 10)).toEqual(minutes)
      const listed = (yield* http(`${server.url}/api/schedules`)).json as Array<{ id: string; nextFire: number; lastFire: number }>
      expect(listed.find((schedule) => schedule.id === "once")).toMatchObject({
        lastFire: Date.parse("2026-05-05T09:20:00Z"),
        nextFire: Date.parse("2026-05-05T09:21:00Z")
      })
    }))

  it.scoped("agent timers of an agent no longer in the build wait without keeping the schedules due after them from firing", () =>
    Effect.gen(function*() {
      yield* at("2026-05-04T08:00:00Z")
      const storeFile = join(mkdtempSync(join(tmpdir(), "foundry-sched-")), "foundry.db")
      const root = yield* tempProject(project({ morning: `cron: "0 9 * * *"` }))
      yield* Effect.scoped(startServer(root, { model: plannedModel, storeFile }))
      // 150 timers an agent set for its instances, due before the schedule; the agent was renamed since.
      const spec = (index: number) =>
        JSON.stringify({
          schedule: `remind-${index}`,
          agent: "gone",
          instance: `customer-${index}`,
          message: "follow up",
          timing: { at: "2026-05-04T08:30:00.000Z" },
          overlap: "allow",
          misfire: "run-once"
        })
      yield* Effect.scoped(Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.forEach(Array.from({ length: 150 }, (_, index) => index), (index) =>
          sql`INSERT INTO foundry_activations (id, kind, spec, status, next_fire, last_fire, last_run_id, updated_at)
            VALUES (${`agent:gone:customer-${index}:remind`}, 'agent', ${spec(index)}, 'active', ${Date.parse("2026-05-04T08:30:00Z")}, NULL, NULL, 0)`)
      ).pipe(Effect.provide(SqliteDatabase.layer(storeFile).pipe(Layer.provide(NodeContext.layer)))))
      const server = yield* startServer(root, { model: plannedModel, storeFile })
      yield* TestClock.adjust("1 hour")
      yield* realSleep(100)
      expect(yield* firings(server.url, "morning", 1)).toEqual(["2026-05-04T09:00:00.000Z"])
      // The timers stay, for when their agent comes back.
      const listed = (yield* http(`${server.url}/api/schedules`)).json as Array<{ id: string; status: string }>
      expect(listed.filter((schedule) => schedule.id.startsWith("remind-") && schedule.status === "active")).toHaveLength(150)
    }))

  it.scoped("a schedule removed while no server ran does not fire its missed firing as the next server starts", () =>
    Effect.gen(function*() {
      yield* at("2026-05-04T08:00:00Z")
      const storeFile = join(mkdtempSync(join(tmpdir(), "foundry-sched-")), "foundry.db")
      yield* Effect.scoped(startServer(yield* tempProject(project({ nightly: `cron: "0 9 * * *"` })), { model: plannedModel, storeFile }))
      // Down over its time; meanwhile its file was deleted.
      yield* at("2026-05-04T10:00:00Z")
      const server = yield* startServer(yield* tempProject(project({ morning: `cron: "0 11 * * *"` })), { model: plannedModel, storeFile })
      yield* TestClock.adjust("1 second")
      yield* realSleep(300)
      const runs = (yield* http(`${server.url}/api/runs?limit=1000`)).json as Array<RunBody>
      expect(runs.filter((run) => run.source?.schedule === "nightly")).toEqual([])
      const listed = (yield* http(`${server.url}/api/schedules`)).json as Array<{ id: string }>
      expect(listed.map((schedule) => schedule.id)).toEqual(["morning"])
    }))

  it.scoped("a firing whose run cannot be stored is tried again later alone: the schedules due after it fire", () =>
    Effect.gen(function*() {
      yield* at("2026-05-04T08:00:00Z")
      const storeFile = join(mkdtempSync(join(tmpdir(), "foundry-sched-")), "foundry.db")
      const withMessage = (message: string) => `import { defineSchedule } from "foundry"
import worker from "../agents/worker/agent.js"
export default defineSchedule({ agent: worker, message: ${JSON.stringify(message)}, cron: "0 9 * * *" })
`
      const root = yield* tempProject({
        ...durableProject(join(tmpdir(), "unused.log")),
        // Due at the same time, and first by id.
        "schedules/a-poisoned.ts": withMessage("poison"),
        "schedules/b-healthy.ts": withMessage(plan({}))
      })
      yield* Effect.scoped(startServer(root, { model: plannedModel, storeFile }))
      // The store refuses the poisoned schedule's runs, as PostgreSQL refused text it cannot keep.
      yield* Effect.scoped(Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql.unsafe(`CREATE TRIGGER refuse_poison BEFORE INSERT ON foundry_runs WHEN NEW.input = 'poison'
          BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`)).pipe(
          Effect.provide(SqliteDatabase.layer(storeFile).pipe(Layer.provide(NodeContext.layer)))
        ))
      const server = yield* startServer(root, { model: plannedModel, storeFile })
      yield* TestClock.adjust("1 hour")
      yield* realSleep(200)
      expect(yield* firings(server.url, "b-healthy", 1)).toEqual(["2026-05-04T09:00:00.000Z"])
      expect(yield* firings(server.url, "a-poisoned", 0)).toEqual([])
    }))

  it.scoped("catch-up under overlap skip starts none of the missed firings while the run from before still goes", () =>
    Effect.gen(function*() {
      yield* at("2026-05-04T08:00:00Z")
      const storeFile = join(mkdtempSync(join(tmpdir(), "foundry-sched-")), "foundry.db")
      const root = yield* tempProject({
        ...durableProject(join(tmpdir(), "unused.log")),
        "schedules/busy.ts": `import { defineSchedule } from "foundry"
import worker from "../agents/worker/agent.js"
export default defineSchedule({
  agent: worker,
  cron: "0 9 * * *",
  overlap: "skip",
  misfire: "catch-up",
  message: ${JSON.stringify(plan({ calls: [{ name: "slow", arguments: { ms: 30 * 86_400_000 } }] }))}
})
`
      })
      // The 09:00 firing starts a run of a month; the process stops while it goes.
      yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* startServer(root, { model: plannedModel, storeFile })
        yield* TestClock.adjust("1 hour")
        yield* realSleep(100)
        expect(yield* firings(server.url, "busy", 1)).toEqual(["2026-05-04T09:00:00.000Z"])
      }))
      // Back three days later, three 09:00 firings were missed, and the run still goes: none starts.
      yield* at("2026-05-07T10:00:00Z")
      const server = yield* startServer(root, { model: plannedModel, storeFile })
      yield* TestClock.adjust("1 second")
      yield* realSleep(200)
      expect(yield* firings(server.url, "busy", 2)).toEqual(["2026-05-04T09:00:00.000Z"])
      const listed = (yield* http(`${server.url}/api/schedules`)).json as Array<{ id: string; nextFire: number; lastFire: number }>
      expect(listed.find((s) => s.id === "busy")).toMatchObject({
        lastFire: Date.parse("2026-05-07T09:00:00Z"),
        nextFire: Date.parse("2026-05-08T09:00:00Z")
      })
    }))

  it.scoped("the config's schedules.misfireGrace decides how late a firing may be before its misfire policy applies", () =>
    Effect.gen(function*() {
      /** A `misfire: "skip"` schedule armed before 09:00 whose process is back at 09:30: the firings that ran, once `count` did. */
      const lateBy30Minutes = (config: string, count: number) =>
        Effect.gen(function*() {
          yield* at("2026-05-04T00:00:00Z")
          const storeFile = join(mkdtempSync(join(tmpdir(), "foundry-sched-")), "foundry.db")
          const root = yield* tempProject({
            ...project({ skipper: `cron: "0 9 * * *", misfire: "skip"` }),
            ...(config === "" ? {} : { "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig(${config})\n` })
          })
          yield* Effect.scoped(startServer(root, { model: plannedModel, storeFile }))
          yield* at("2026-05-04T09:30:00Z")
          const server = yield* startServer(root, { model: plannedModel, storeFile })
          yield* TestClock.adjust("1 second")
          yield* realSleep(100)
          return yield* firings(server.url, "skipper", count)
        })
      // By default (1 minute) half an hour late is a misfire, which "skip" drops.
      expect(yield* lateBy30Minutes("", 0)).toEqual([])
      // With an hour of grace the same firing is merely late: it runs, for its own time.
      expect(yield* lateBy30Minutes(`{ schedules: { misfireGrace: "1 hour" } }`, 1)).toEqual(["2026-05-04T09:00:00.000Z"])
    }))

  it.scoped("overlap skip does not start a firing while the last one's run still goes", () =>
    Effect.gen(function*() {
      yield* at("2026-06-01T00:00:00Z")
      const server = yield* busyEveryMinute("skip")
      for (let minute = 0; minute < 3; minute++) {
        yield* TestClock.adjust("1 minute")
        yield* realSleep(80)
      }
      const runs = yield* firings(server.url, "busy", 1)
      expect(runs).toEqual(["2026-06-01T00:01:00.000Z"])
    }))

  it.scoped("overlap queue keeps one firing waiting behind the running one, and skips the rest", () =>
    Effect.gen(function*() {
      yield* at("2026-06-01T00:00:00Z")
      const server = yield* busyEveryMinute("queue")
      for (let minute = 0; minute < 4; minute++) {
        yield* TestClock.adjust("1 minute")
        yield* realSleep(80)
      }
      const runs = (yield* http(`${server.url}/api/runs?limit=1000`)).json as Array<RunBody>
      expect(runs.filter((r) => r.source?.schedule === "busy").map((r) => [r.source!.scheduledFor, r.status]).sort()).toEqual([
        ["2026-06-01T00:01:00.000Z", "running"],
        ["2026-06-01T00:02:00.000Z", "queued"]
      ])
    }))

  it.scoped("pause, resume and trigger through the API", () =>
    Effect.gen(function*() {
      yield* at("2026-06-01T00:00:00Z")
      const root = yield* tempProject(project({ hourly: `every: "1 hour"` }))
      const server = yield* startServer(root, { model: plannedModel })
      const paused = yield* http(`${server.url}/api/schedules/hourly/pause`, { method: "POST" })
      expect(paused.json).toMatchObject({ id: "hourly", status: "paused" })
      yield* TestClock.adjust("2 hours")
      yield* realSleep(50)
      expect(yield* firings(server.url, "hourly", 0)).toEqual([])
      const triggered = yield* http(`${server.url}/api/schedules/hourly/trigger`, { method: "POST" })
      expect(triggered.status).toBe(200)
      expect(yield* firings(server.url, "hourly", 1)).toEqual(["2026-06-01T02:00:00.000Z"])
      const resumed = yield* http(`${server.url}/api/schedules/hourly/resume`, { method: "POST" })
      expect(resumed.json).toMatchObject({ status: "active", nextFire: Date.parse("2026-06-01T03:00:00Z") })
      expect((yield* http(`${server.url}/api/schedules/nope/pause`, { method: "POST" })).status).toBe(404)

      // Run now on a paused instance starts nothing, and says so instead of answering as if it fired.
      const pausing = yield* http(`${server.url}/api/instances/default?agent=worker`, { method: "PATCH", body: { paused: true, reason: "holiday" } })
      expect(pausing.status).toBe(200)
      yield* TestClock.adjust("1 minute")
      const skipped = yield* http(`${server.url}/api/schedules/hourly/trigger`, { method: "POST" })
      expect(skipped.status).toBe(409)
      expect(skipped.json).toMatchObject({ _tag: "ScheduleFiringSkipped", message: expect.stringContaining("paused") })
      expect((yield* http(`${server.url}/api/schedules`)).json).toEqual(
        expect.arrayContaining([expect.objectContaining({ id: "hourly", lastFire: Date.parse("2026-06-01T02:00:00Z") })])
      )
    }))
})

describe.skipIf(skipPostgres)("a schedule's firing on PostgreSQL", () => {
  it.scopedLive("is recorded on the schedule as stored after it, not as read before it: a pause that came meanwhile stays", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabase
      const root = yield* tempProject({
        ...project({ ticker: `every: "1 second"` }),
        "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ store: { postgres: ${JSON.stringify(url)} } })\n`
      })
      const server = yield* startServerOnItsStore(root, plannedModel)
      const sql = yield* connect(url)
      // Runs held back: the first firing's run waits for the table while the schedule is paused.
      const release = yield* holdLocks(sql, sql`LOCK TABLE foundry_runs IN SHARE MODE`)
      yield* until("the firing's run waits", someoneWaitsForALock(sql))
      const pausing = yield* http(`${server}/api/schedules/ticker/pause`, { method: "POST" }).pipe(Effect.fork)
      yield* realSleep(300)
      yield* release
      expect((yield* Fiber.join(pausing)).json).toMatchObject({ id: "ticker", status: "paused" })
      yield* realSleep(500)
      const [ticker] = (yield* http(`${server}/api/schedules`)).json as Array<{ readonly id: string; readonly status: string; readonly lastFire: number | null }>
      // Paused, with the firing that was under way recorded.
      expect(ticker).toMatchObject({ id: "ticker", status: "paused", lastFire: expect.any(Number) })
    }), 30_000)
})
