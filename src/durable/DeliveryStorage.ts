/**
 * Inbound deliveries (webhook calls with an event id): claimed once, so that a repeated delivery
 * answers with the first one's result instead of starting its runs again. A claim remembers the
 * signature it was made with (its fingerprint), so that the same signed request seen again can be
 * told from a sender's retry, which is signed anew.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Context, Duration, Effect, Layer, Schedule } from "effect"
import { pruneBatch, removedInBatches } from "./inBatches.js"
import { failAs, type StoreError } from "./StoreError.js"

/**
 * What claiming a delivery found: it is this caller's, since `claimedAt` (which its completion or
 * release names, so that a claim taken over from it is left alone), `again` when an earlier
 * attempt had claimed it (and released it, or died); or another caller's, still in progress or
 * done with its result, with the fingerprint that caller claimed it with.
 */
export type DeliveryClaim =
  | { readonly _tag: "claimed"; readonly claimedAt: number; readonly again: boolean }
  | { readonly _tag: "processing"; readonly fingerprint: string | null }
  | { readonly _tag: "done"; readonly fingerprint: string | null; readonly result: unknown }

/**
 * A claim still `processing` after this long was left by a process that died: processing a
 * delivery only submits runs, which takes milliseconds. The next attempt takes it over; the runs
 * the dead attempt had started are not started again, their submissions being keyed by the
 * delivery (see `triggers/Webhooks.ts`).
 */
export const staleClaimAfterMs = 60_000

/**
 * How long a delivery is remembered: longer than senders retry one (Stripe for three days, most for
 * hours), so that a retry finds the first one's result. One sent again after that starts its runs
 * anew. Without it the table kept every delivery with its result for good.
 */
export const deliveriesKeptFor = Duration.days(7)

/** Delivery storage. */
export class DeliveryStorage extends Context.Tag("foundry/DeliveryStorage")<DeliveryStorage, {
  /**
   * Claims an inbound delivery by its id: `claimed` for the first caller; later callers learn
   * that it is still `processing`, or get the stored result once the first has finished. A
   * delivery in progress is never handed to a second caller, unless its claim has gone stale
   * (`staleClaimAfterMs`: its process died).
   */
  readonly claim: (id: string, webhook: string, fingerprint: string | null) => Effect.Effect<DeliveryClaim, StoreError>
  /** Stores the result of the claim made at `claimedAt`, unless another attempt has taken the claim over since. */
  readonly complete: (id: string, claimedAt: number, result: unknown) => Effect.Effect<void, StoreError>
  /**
   * Gives up the claim made at `claimedAt`, so that the sender's retry is processed afresh; one
   * taken over since is not this caller's to give up. The delivery stays, its claim stale at once:
   * the retry takes it over as it would a dead process's, and knows the event was received before.
   */
  readonly release: (id: string, claimedAt: number) => Effect.Effect<void, StoreError>
  /** Forgets the deliveries received before `receivedBefore` (ms since the epoch); returns how many. */
  readonly prune: (receivedBefore: number) => Effect.Effect<number, StoreError>
}>() {}

/**
 * Delivery storage on the database's `SqlClient`, forgetting deliveries older than
 * `deliveriesKeptFor` once an hour while it lasts.
 */
export const layer = Layer.scoped(
  DeliveryStorage,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const prune = (receivedBefore: number) =>
      removedInBatches(sql`DELETE FROM foundry_deliveries WHERE id IN
        (SELECT id FROM foundry_deliveries WHERE received_at < ${receivedBefore} LIMIT ${pruneBatch}) RETURNING id`).pipe(failAs("pruneDeliveries"))
    // A minute after the start, not with it: a process that starts (a `foundry run`) has better to do.
    yield* Clock.currentTimeMillis.pipe(
      Effect.flatMap((now) => prune(now - Duration.toMillis(deliveriesKeptFor))),
      Effect.catchAll((error) => Effect.logWarning(`could not forget old webhook deliveries: ${error.message}; tries again in an hour`)),
      Effect.delay("1 minute"),
      Effect.repeat(Schedule.spaced("1 hour")),
      Effect.forkScoped
    )
    return DeliveryStorage.of({
      prune,
      claim: (id, webhook, fingerprint) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const claimed = yield* sql<{ readonly id: string }>`INSERT INTO foundry_deliveries ${
            sql.insert({ id, webhook, status: "processing", receivedAt: now, fingerprint })
          } ON CONFLICT (id) DO NOTHING RETURNING id`
          if (claimed.length > 0) return { _tag: "claimed", claimedAt: now, again: false } satisfies DeliveryClaim
          const takenOver = yield* sql<{ readonly id: string }>`UPDATE foundry_deliveries
            SET received_at = ${now}, fingerprint = ${fingerprint}
            WHERE id = ${id} AND status = 'processing' AND received_at < ${now - staleClaimAfterMs} RETURNING id`
          if (takenOver.length > 0) return { _tag: "claimed", claimedAt: now, again: true } satisfies DeliveryClaim
          const rows = yield* sql<{ readonly status: string; readonly result: string | null; readonly fingerprint: string | null }>`SELECT status, result, fingerprint FROM foundry_deliveries WHERE id = ${id}`
          const row = rows[0]
          if (row === undefined || row.status !== "done" || row.result === null) {
            return { _tag: "processing", fingerprint: row?.fingerprint ?? null } satisfies DeliveryClaim
          }
          const result: unknown = JSON.parse(row.result)
          return { _tag: "done", fingerprint: row.fingerprint, result } satisfies DeliveryClaim
        }).pipe(failAs("claimDelivery")),
      complete: (id, claimedAt, result) =>
        sql`UPDATE foundry_deliveries SET status = 'done', result = ${JSON.stringify(result)}
          WHERE id = ${id} AND status = 'processing' AND received_at = ${claimedAt}`.pipe(
          Effect.asVoid,
          failAs("completeDelivery")
        ),
      release: (id, claimedAt) =>
        // Not deleted: a retry that claimed it anew could not tell it from the first delivery of
        // its event, and would record the delivery received a second time. Any version of Foundry
        // takes a stale claim over, so a process of the release before reads it as it did.
        sql`UPDATE foundry_deliveries SET received_at = ${claimedAt - staleClaimAfterMs - 1}
          WHERE id = ${id} AND status = 'processing' AND received_at = ${claimedAt}`.pipe(
          Effect.asVoid,
          failAs("releaseDelivery")
        )
    })
  })
)
