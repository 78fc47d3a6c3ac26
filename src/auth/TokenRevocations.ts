/**
 * The moment a token is revoked, for what a request admitted on it keeps open. The door looks at a
 * token once per request, and an event stream is one request: the feed, a run's events, an OpenAI
 * client's streamed answer or an MCP session's stream went on after its token was revoked, for as
 * long as it lasted (a run that waits a day for a person). Now what a request keeps open ends with
 * its token: at once when it is revoked here (`DELETE /api/tokens/:id`), within `checkEvery` when
 * another process on the store revokes it (`foundry token revoke`, another runner of a cluster).
 */
import { Context, type Duration, Effect, Exit, Fiber, FiberRef, Layer, Option, Runtime } from "effect"
import type { StoreError } from "../durable/StoreError.js"
import { type TokenRecord, TokenStorage } from "./TokenStorage.js"

/** Calls `end` once the access it was asked about ends; returns what takes that back. */
export type AccessEnds = (end: () => void) => () => void

/** Revocations, as they reach this process. */
export class TokenRevocations extends Context.Tag("foundry/TokenRevocations")<TokenRevocations, {
  /** Calls `end` once token `id` is revoked; returns what takes that back. */
  readonly onRevoked: (id: string) => AccessEnds
  /** Revokes token `id` in the store and ends, at once, what it keeps open here; none when there is no such token. */
  readonly revoke: (id: string) => Effect.Effect<Option.Option<TokenRecord>, StoreError>
}>() {}

/**
 * What ends the access the current request was admitted with (the door sets it; never, for a
 * request admitted without a token): a response that writes its own stream ends on it.
 */
export const currentAccessEnds: FiberRef.FiberRef<AccessEnds> = FiberRef.unsafeMake<AccessEnds>(() => () => {})

/** Revocations for a server on the store, which looks for another process's every `checkEvery` while anything waits on one. */
export const layer = (checkEvery: Duration.DurationInput) =>
  Layer.scoped(
    TokenRevocations,
    Effect.gen(function*() {
      const tokens = yield* TokenStorage
      // Plain callbacks by token, not fibers waiting: every event stream on a token registers one.
      const waiting = new Map<string, Set<() => void>>()
      const ended = (id: string) => {
        const ends = waiting.get(id)
        if (ends === undefined) return
        waiting.delete(id)
        for (const end of ends) {
          try {
            end()
          } catch {
            // One stream that fails to end does not keep the others open.
          }
        }
      }
      // Another process's revocation reaches this one only through the store. Tokens are few (people
      // make them), so a look reads them all; looks are made only while a stream waits on a token.
      const look = Effect.gen(function*() {
        for (const token of yield* tokens.list) if (token.revokedAt !== null) ended(token.id)
      }).pipe(Effect.catchAllCause((cause) => Effect.logDebug("could not look for revoked tokens; looking again", cause)))
      let looking: Fiber.RuntimeFiber<void> | undefined
      const looks = Effect.gen(function*() {
        while (true) {
          yield* Effect.sleep(checkEvery)
          // Checked and given up in one step: a stream that registers next starts the looks again.
          if (waiting.size === 0) {
            looking = undefined
            return
          }
          yield* look
        }
      }).pipe(
        // Ended otherwise than by giving up (which said so itself): the next stream to register starts them again.
        Effect.onExit((exit) => Exit.isSuccess(exit) ? Effect.void : Effect.sync(() => void (looking = undefined)))
      )
      const startLooking = Runtime.runFork(yield* Effect.runtime<never>())
      yield* Effect.addFinalizer(() => looking === undefined ? Effect.void : Fiber.interrupt(looking))
      const onRevoked = (id: string): AccessEnds => (end) => {
        const ends = waiting.get(id) ?? new Set()
        waiting.set(id, ends)
        ends.add(end)
        if (looking === undefined) looking = startLooking(looks)
        return () => {
          ends.delete(end)
          if (ends.size === 0 && waiting.get(id) === ends) waiting.delete(id)
        }
      }
      return TokenRevocations.of({
        onRevoked,
        revoke: (id) => Effect.tap(tokens.revoke(id), (found) => Effect.sync(() => Option.isSome(found) && ended(id)))
      })
    })
  )
