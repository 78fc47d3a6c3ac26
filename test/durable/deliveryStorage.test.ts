/**
 * A webhook delivery's claim taken over from an attempt that went stale: that attempt's late
 * release or completion leaves the new claim alone; a delivery is remembered for a week, then
 * forgotten. On SQLite and PostgreSQL.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Layer, TestClock } from "effect"
import { deliveriesKeptFor, DeliveryStorage, layer as deliveryStorage, staleClaimAfterMs } from "../../src/durable/DeliveryStorage.js"
import { backends } from "../journal/backends.js"

for (const backend of backends) {
  describe.skipIf(backend.skip)(`webhook deliveries on ${backend.name}`, () => {
    it.scoped("a claim taken over is the new attempt's: the stale attempt's release and completion change nothing", () =>
      Effect.gen(function*() {
        const deliveries = Context.get(yield* Layer.build(deliveryStorage.pipe(Layer.provide(yield* backend.fresh))), DeliveryStorage)
        const first = yield* deliveries.claim("hooks:evt_1", "hooks", "signature-1")
        yield* TestClock.adjust(staleClaimAfterMs + 1_000)
        const second = yield* deliveries.claim("hooks:evt_1", "hooks", "signature-2")
        if (first._tag !== "claimed" || second._tag !== "claimed") return yield* Effect.dieMessage(`not claimed: ${first._tag}, ${second._tag}`)
        // The first attempt, slow, gives up: the second's claim stands (a third is told it is in progress).
        yield* deliveries.release("hooks:evt_1", first.claimedAt)
        expect(yield* deliveries.claim("hooks:evt_1", "hooks", "signature-3")).toEqual({ _tag: "processing", fingerprint: "signature-2" })
        // Its completion is not stored either; the second's is.
        yield* deliveries.complete("hooks:evt_1", first.claimedAt, { by: "first" })
        expect(yield* deliveries.claim("hooks:evt_1", "hooks", "signature-3")).toEqual({ _tag: "processing", fingerprint: "signature-2" })
        yield* deliveries.complete("hooks:evt_1", second.claimedAt, { by: "second" })
        expect(yield* deliveries.claim("hooks:evt_1", "hooks", "signature-3")).toEqual({ _tag: "done", fingerprint: "signature-2", result: { by: "second" } })
      }))

    it.scoped("a delivery is remembered for a week, then forgotten: one received since is still answered with its result", () =>
      Effect.gen(function*() {
        const deliveries = Context.get(yield* Layer.build(deliveryStorage.pipe(Layer.provide(yield* backend.fresh))), DeliveryStorage)
        const old = yield* deliveries.claim("hooks:evt_old", "hooks", null)
        if (old._tag !== "claimed") return yield* Effect.dieMessage(`not claimed: ${old._tag}`)
        yield* deliveries.complete("hooks:evt_old", old.claimedAt, { runs: 1 })
        yield* TestClock.adjust(Duration.subtract(deliveriesKeptFor, Duration.days(1)))
        const recent = yield* deliveries.claim("hooks:evt_recent", "hooks", null)
        if (recent._tag !== "claimed") return yield* Effect.dieMessage(`not claimed: ${recent._tag}`)
        yield* deliveries.complete("hooks:evt_recent", recent.claimedAt, { runs: 2 })
        // The hourly prune, a day and two hours on: the first is past the week, the second is not.
        yield* TestClock.adjust(Duration.sum(Duration.days(1), Duration.hours(2)))
        // The layer's own prune woke on the way; on PostgreSQL its DELETE may still be in flight,
        // and a prune beside it takes the row first. Once both are done nothing is left to forget.
        const cutoff = (yield* Effect.clockWith((clock) => clock.currentTimeMillis)) - Duration.toMillis(deliveriesKeptFor)
        let left = yield* deliveries.prune(cutoff)
        for (let attempt = 0; left > 0 && attempt < 5; attempt++) left = yield* deliveries.prune(cutoff)
        expect(left).toBe(0)
        expect((yield* deliveries.claim("hooks:evt_old", "hooks", null))._tag).toBe("claimed")
        expect(yield* deliveries.claim("hooks:evt_recent", "hooks", null)).toEqual({ _tag: "done", fingerprint: null, result: { runs: 2 } })
      }))
  })
}
