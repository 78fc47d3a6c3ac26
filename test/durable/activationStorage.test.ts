/**
 * A schedule's firing recorded on its activation as stored after the firing, not as the scheduler
 * read it before: a change that came meanwhile (a pause, another spec, a removal) stays; a
 * schedule saved again (a reload, a deploy) on the activation as stored then; and a release's
 * schedules written only while it is the store's current release. On SQLite and PostgreSQL.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Option, TestClock } from "effect"
import { type ActivationRecord, ActivationStorage, type ActivationUpdate } from "../../src/durable/ActivationStorage.js"
import * as PgDatabase from "../../src/durable/PgDatabase.js"
import { type Backend, backends, type DatabaseLayer, postgres, storageLayer } from "../journal/backends.js"
import { connect, freshSchema, holdLocks, someoneWaitsForALock } from "../support/postgres.js"
import { until } from "../support/until.js"

const hourly: ActivationUpdate = {
  id: "schedule:hourly",
  kind: "schedule",
  spec: { schedule: "hourly", agent: "worker", instance: "default", message: "tick", timing: { every: "1 hour" }, overlap: "allow", misfire: "run-once" },
  status: "active",
  nextFire: 3_600_000
}

/** The activation storage on a fresh place of `backend`, with `hourly` stored, and it as read then (the clock at 0). */
const storedHourly = (backend: Backend) =>
  Effect.gen(function*() {
    const activations = Context.get(yield* Layer.build(storageLayer(yield* backend.fresh)), ActivationStorage)
    yield* activations.write({ saves: [hourly] })
    const read = yield* activations.get(hourly.id)
    if (Option.isNone(read)) return yield* Effect.dieMessage("not stored")
    // The firing comes a little later than the read, as a run's start takes.
    yield* TestClock.adjust("1 second")
    return { activations, read: read.value }
  })

/** `read`'s firing at its time, its next an hour after. */
const firedAfter = (activations: Context.Tag.Service<ActivationStorage>, read: ActivationRecord) =>
  activations.fired(read.id, { lastFire: 3_600_000, lastRunId: "run_1", next: { readAt: read.updatedAt, nextFire: 7_200_000 } })

const stored = (activations: Context.Tag.Service<ActivationStorage>) =>
  Effect.map(activations.get(hourly.id), Option.map(({ lastFire, lastRunId, nextFire, spec, status }) => ({ status, nextFire, lastFire, lastRunId, timing: spec.timing })))

for (const backend of backends) {
  describe.skipIf(backend.skip)(`activations on ${backend.name}: a firing recorded`, () => {
    it.scoped("on an activation unchanged since it was read: its next time, its last firing and run", () =>
      Effect.gen(function*() {
        const { activations, read } = yield* storedHourly(backend)
        yield* firedAfter(activations, read)
        expect(yield* stored(activations)).toEqual(Option.some({ status: "active", nextFire: 7_200_000, lastFire: 3_600_000, lastRunId: "run_1", timing: { every: "1 hour" } }))
      }))

    it.scoped("paused meanwhile: it stays paused, with the firing recorded", () =>
      Effect.gen(function*() {
        const { activations, read } = yield* storedHourly(backend)
        yield* activations.setStatus(hourly.id, "paused", 3_600_000)
        yield* firedAfter(activations, read)
        expect(yield* stored(activations)).toEqual(Option.some({ status: "paused", nextFire: 3_600_000, lastFire: 3_600_000, lastRunId: "run_1", timing: { every: "1 hour" } }))
      }))

    it.scoped("paused in the same millisecond as it was read: it stays paused, its next time the pause's", () =>
      Effect.gen(function*() {
        const { activations, read } = yield* storedHourly(backend)
        yield* TestClock.setTime(read.updatedAt)
        yield* activations.setStatus(hourly.id, "paused", 3_600_000)
        yield* firedAfter(activations, read)
        expect(yield* stored(activations)).toEqual(Option.some({ status: "paused", nextFire: 3_600_000, lastFire: 3_600_000, lastRunId: "run_1", timing: { every: "1 hour" } }))
      }))

    it.scoped("given another timing meanwhile (a reload, a deploy): it keeps that timing's next time", () =>
      Effect.gen(function*() {
        const { activations, read } = yield* storedHourly(backend)
        yield* activations.write({ saves: [{ ...hourly, spec: { ...hourly.spec, timing: { every: "1 day" } }, nextFire: 86_400_000 }] })
        yield* firedAfter(activations, read)
        expect(yield* stored(activations)).toEqual(Option.some({ status: "active", nextFire: 86_400_000, lastFire: 3_600_000, lastRunId: "run_1", timing: { every: "1 day" } }))
      }))

    it.scoped("removed meanwhile: it stays removed", () =>
      Effect.gen(function*() {
        const { activations, read } = yield* storedHourly(backend)
        yield* activations.remove(hourly.id)
        yield* firedAfter(activations, read)
        expect(yield* stored(activations)).toEqual(Option.none())
      }))

    it.scoped("saved again with another timing (a reload) after a pause and a firing: paused still, its last firing kept", () =>
      Effect.gen(function*() {
        const { activations, read } = yield* storedHourly(backend)
        yield* firedAfter(activations, read)
        yield* activations.setStatus(hourly.id, "paused", 7_200_000)
        yield* activations.write({ saves: [{ ...hourly, spec: { ...hourly.spec, timing: { every: "1 day" } }, nextFire: 86_400_000 }] })
        expect(yield* stored(activations)).toEqual(Option.some({ status: "paused", nextFire: 86_400_000, lastFire: 3_600_000, lastRunId: "run_1", timing: { every: "1 day" } }))
      }))
  })
}

const daily: ActivationUpdate = { ...hourly, id: "schedule:daily", spec: { ...hourly.spec, schedule: "daily", timing: { every: "1 day" } }, nextFire: 86_400_000 }

/** The activation storage and the SQL client on `place`, with `hourly` stored. */
const withHourly = (place: DatabaseLayer) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(storageLayer(place))
    const activations = Context.get(context, ActivationStorage)
    yield* activations.write({ saves: [hourly] })
    return { activations, sql: Context.get(context, SqlClient.SqlClient) }
  })

/** The ids of the schedules stored. */
const scheduleIds = (activations: Context.Tag.Service<ActivationStorage>) =>
  Effect.map(activations.list("schedule"), (found) => found.map(({ id }) => id))

/** What a deploy's switch writes: `release` the store's current one. */
const deployed = (sql: SqlClient.SqlClient, release: string) =>
  sql`INSERT INTO foundry_release_current (name, release_id, updated_at) VALUES ('current', ${release}, 0)
    ON CONFLICT (name) DO UPDATE SET release_id = ${release}`

/** Release r1's sync: `daily` in, `hourly` out. */
const syncOfR1 = { saves: [daily], removes: [hourly.id], whileCurrent: "r1" }

for (const backend of backends) {
  describe.skipIf(backend.skip)(`activations on ${backend.name}: a release's schedules`, () => {
    it.scoped("are written while no release was deployed, and while theirs is the current one", () =>
      Effect.gen(function*() {
        const { activations, sql } = yield* withHourly(yield* backend.fresh)
        expect(yield* activations.write({ saves: [daily], whileCurrent: "r1" })).toBe(true)
        yield* deployed(sql, "r1")
        expect(yield* activations.write(syncOfR1)).toBe(true)
        expect(yield* scheduleIds(activations)).toEqual([daily.id])
      }))

    it.scoped("are not written once another release is current: the store keeps that one's", () =>
      Effect.gen(function*() {
        const { activations, sql } = yield* withHourly(yield* backend.fresh)
        yield* deployed(sql, "r2")
        expect(yield* activations.write(syncOfR1)).toBe(false)
        expect(yield* scheduleIds(activations)).toEqual([hourly.id])
      }))
  })
}

describe.skipIf(postgres.skip)("activations on PostgreSQL: a release's schedules and a deploy at the same moment", () => {
  it.scopedLive("a deploy's switch that commits while the sync waits for the current release: the sync writes nothing", () =>
    Effect.gen(function*() {
      const url = yield* freshSchema
      const { activations, sql } = yield* withHourly(PgDatabase.layer(url))
      yield* deployed(sql, "r1")
      // Another runner's deploy of r2, its switch made and not yet committed, on a connection of its own.
      const other = yield* connect(url)
      const commit = yield* holdLocks(other, other`UPDATE foundry_release_current SET release_id = 'r2' WHERE name = 'current'`)
      const sync = yield* Effect.fork(activations.write(syncOfR1))
      yield* until("the sync waits for the switch", someoneWaitsForALock(other, "%foundry_release_current%"))
      yield* commit
      expect(yield* Fiber.join(sync)).toBe(false)
      expect(yield* scheduleIds(activations)).toEqual([hourly.id])
    }))
})
