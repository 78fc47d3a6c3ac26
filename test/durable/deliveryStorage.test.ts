/**
 * A webhook delivery's claim taken over from an attempt that went stale: that attempt's late
 * release or completion leaves the new claim alone. On SQLite and PostgreSQL.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, TestClock } from "effect"
import { DeliveryStorage, layer as deliveryStorage, staleClaimAfterMs } from "../../src/durable/DeliveryStorage.js"
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
  })
}
