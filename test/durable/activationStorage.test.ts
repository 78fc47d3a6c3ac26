/**
 * A schedule's firing recorded on its activation as stored after the firing, not as the scheduler
 * read it before: a change that came meanwhile (a pause, another spec, a removal) stays; and a
 * schedule saved again (a reload, a deploy) on the activation as stored then. On SQLite and
 * PostgreSQL.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option, TestClock } from "effect"
import { type ActivationRecord, ActivationStorage, type ActivationUpdate } from "../../src/durable/ActivationStorage.js"
import { type Backend, backends, storageLayer } from "../journal/backends.js"

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
    yield* activations.save(hourly)
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
        yield* activations.save({ ...hourly, spec: { ...hourly.spec, timing: { every: "1 day" } }, nextFire: 86_400_000 })
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
        yield* activations.save({ ...hourly, spec: { ...hourly.spec, timing: { every: "1 day" } }, nextFire: 86_400_000 })
        expect(yield* stored(activations)).toEqual(Option.some({ status: "paused", nextFire: 86_400_000, lastFire: 3_600_000, lastRunId: "run_1", timing: { every: "1 day" } }))
      }))
  })
}
