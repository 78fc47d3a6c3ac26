/**
 * The moment a token is revoked, for what a request admitted on it keeps open. The door looks at a
 * token once per request, and an event stream is one request: the feed, a run's events, an OpenAI
 * client's streamed answer or an MCP session's stream went on after its token was revoked, for as
 * long as it lasted (a run that waits a day for a person). Now what a request keeps open ends with
 * its token: at once when it is revoked here (`DELETE /api/tokens/:id`), within `checkEvery` when
 * another process on the store revokes it (`foundry token revoke`, another runner of a cluster).
 * What a request admitted on the inspector's session keeps open also ends with the session: at once
 * at sign-out here (`DELETE /api/session`), within `checkEvery` of its end in the store (another
 * process's sign-out, or its `expires_at`).
 */
import { Clock, Context, type Duration, Effect, Exit, Fiber, FiberRef, Layer, Option, Runtime } from "effect"
import type { StoreError } from "../durable/StoreError.js"
import { hashToken } from "./token.js"
import { type SessionRecord, type TokenRecord, TokenStorage } from "./TokenStorage.js"

/** Calls `end` once the access it was asked about ends; returns what takes that back. */
export type AccessEnds = (end: () => void) => () => void

/**
 * Calls `end` once, when the first of `ends` comes, and takes back the others then: an ending that
 * has come is not taken back by the stream it ended, and the others would keep it registered.
 */
export const eitherEnds = (...ends: ReadonlyArray<AccessEnds>): AccessEnds => (end) => {
  let done = false
  let takeBacks: ReadonlyArray<() => void> = []
  const takeAllBack = () => takeBacks.forEach((takeBack) => takeBack())
  const once = () => {
    if (done) return
    done = true
    takeAllBack()
    end()
  }
  takeBacks = ends.map((ending) => ending(once))
  if (done) takeAllBack()
  return takeAllBack
}

/** Revocations and sessions' ends, as they reach this process. */
export class TokenRevocations extends Context.Tag("foundry/TokenRevocations")<TokenRevocations, {
  /** Calls `end` once token `id` is revoked; returns what takes that back. */
  readonly onRevoked: (id: string) => AccessEnds
  /** Revokes token `id` in the store and ends, at once, what it keeps open here; none when there is no such token. */
  readonly revoke: (id: string) => Effect.Effect<Option.Option<TokenRecord>, StoreError>
  /** Calls `end` once `session` ends (signed out, or at its `expiresAt`); returns what takes that back. */
  readonly onSessionEnded: (session: SessionRecord) => AccessEnds
  /** Ends the session with `secret` in the store (signing out) and, at once, what it keeps open here. */
  readonly endSession: (secret: string) => Effect.Effect<void, StoreError>
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
      // And by session (its secret's hash), for a stream admitted on the inspector's session, with the session's end.
      const sessions = new Map<string, { readonly expiresAt: number; readonly ends: Set<() => void> }>()
      const endAll = (ends: Set<() => void>) => {
        for (const end of ends) {
          try {
            end()
          } catch {
            // One stream that fails to end does not keep the others open.
          }
        }
      }
      const ended = (id: string) => {
        const ends = waiting.get(id)
        if (ends === undefined) return
        waiting.delete(id)
        endAll(ends)
      }
      const sessionEnded = (hash: string) => {
        const found = sessions.get(hash)
        if (found === undefined) return
        sessions.delete(hash)
        endAll(found.ends)
      }
      // Another process's revocation reaches this one only through the store. Tokens are few (people
      // make them), so a look reads them all; looks are made only while a stream waits on a token.
      const lookForRevoked = Effect.gen(function*() {
        if (waiting.size === 0) return
        for (const token of yield* tokens.list) if (token.revokedAt !== null) ended(token.id)
      }).pipe(Effect.catchAllCause((cause) => Effect.logDebug("could not look for revoked tokens; looking again", cause)))
      // A session's end passes by its own clock, without the store; another process's sign-out is
      // found in the store, all waiting sessions in one query.
      const lookForEndedSessions = Effect.gen(function*() {
        if (sessions.size === 0) return
        const now = yield* Clock.currentTimeMillis
        for (const [hash, { expiresAt }] of sessions) if (expiresAt <= now) sessionEnded(hash)
        const asked = [...sessions.keys()]
        const live = yield* tokens.liveSessions(asked)
        for (const hash of asked) if (!live.has(hash)) sessionEnded(hash)
      }).pipe(Effect.catchAllCause((cause) => Effect.logDebug("could not look for ended sessions; looking again", cause)))
      const look = Effect.zipRight(lookForRevoked, lookForEndedSessions)
      let looking: Fiber.RuntimeFiber<void> | undefined
      const looks = Effect.gen(function*() {
        while (true) {
          yield* Effect.sleep(checkEvery)
          // Checked and given up in one step: a stream that registers next starts the looks again.
          if (waiting.size === 0 && sessions.size === 0) {
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
      const onSessionEnded = ({ expiresAt, hash }: SessionRecord): AccessEnds => (end) => {
        const found = sessions.get(hash) ?? { expiresAt, ends: new Set<() => void>() }
        sessions.set(hash, found)
        found.ends.add(end)
        if (looking === undefined) looking = startLooking(looks)
        return () => {
          found.ends.delete(end)
          if (found.ends.size === 0 && sessions.get(hash) === found) sessions.delete(hash)
        }
      }
      return TokenRevocations.of({
        onRevoked,
        revoke: (id) => Effect.tap(tokens.revoke(id), (found) => Effect.sync(() => Option.isSome(found) && ended(id))),
        onSessionEnded,
        endSession: (secret) => Effect.tap(tokens.endSession(secret), () => Effect.sync(() => sessionEnded(hashToken(secret))))
      })
    })
  )
