/**
 * API tokens in the store: made, listed, revoked, and checked on every authenticated request; and
 * the inspector's sessions, each signed in with a token (see `sessionCookie.ts`). Only a hash of
 * each token and each session's secret is stored (see `token.ts`). A session is no token: it is
 * not listed, not counted, and is taken only from the session cookie; it stands for its token
 * (its scope, its rate limit) until it is ended, expires, or its token is revoked. Sessions are in
 * the store, so every process on it knows them.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Clock, Context, Duration, Effect, Layer, Option, Schema } from "effect"
import { failAs, type StoreError } from "../durable/StoreError.js"
import { hashToken, isSessionSecret, issueSessionSecret, issueToken, matchesHash, tokenId } from "./token.js"
import { TokenScope } from "./TokenScope.js"

/** A token as the store keeps it. */
export class TokenRecord extends Schema.Class<TokenRecord>("TokenRecord")({
  id: Schema.String,
  name: Schema.String,
  scope: TokenScope,
  hash: Schema.String,
  createdAt: Schema.Number,
  lastUsedAt: Schema.NullOr(Schema.Number),
  revokedAt: Schema.NullOr(Schema.Number)
}) {}

/** A token just made: its record, and its text, which is never available again. */
export interface IssuedToken {
  readonly record: TokenRecord
  readonly token: string
}

/** A session just made: the secret its cookie holds (never stored), and when it ends. */
export interface IssuedSession {
  readonly secret: string
  readonly expiresAt: number
}

/** A session as what it admits keeps it: found by its secret's hash, ending at `expiresAt` (or sooner). */
export interface SessionRecord {
  readonly hash: string
  readonly expiresAt: number
}

/** How stale `last_used_at` may get: writing it on every request would make each one a write. */
const lastUsedResolution = 60_000

/** Token storage. */
export class TokenStorage extends Context.Tag("foundry/TokenStorage")<TokenStorage, {
  readonly create: (options: { readonly name: string; readonly scope: TokenScope }) => Effect.Effect<IssuedToken, StoreError>
  /** Every token, revoked ones too, oldest first. */
  readonly list: Effect.Effect<ReadonlyArray<TokenRecord>, StoreError>
  /** Revokes a token (revoking it again keeps the first time); none when there is no such token. */
  readonly revoke: (id: string) => Effect.Effect<Option.Option<TokenRecord>, StoreError>
  /** The token `token` is, when it exists, matches and is not revoked; records when it was used. */
  readonly verify: (token: string) => Effect.Effect<Option.Option<TokenRecord>, StoreError>
  /** How many tokens are not revoked. */
  readonly countActive: Effect.Effect<number, StoreError>
  /** A new session for token `tokenId`, ending `lasting` from now (expired sessions are dropped meanwhile). */
  readonly startSession: (tokenId: string, lasting: Duration.DurationInput) => Effect.Effect<IssuedSession, StoreError>
  /** The token the session with `secret` stands for, and the session, when it has not ended or expired and the token is not revoked. */
  readonly verifySession: (
    secret: string
  ) => Effect.Effect<Option.Option<{ readonly token: TokenRecord; readonly session: SessionRecord }>, StoreError>
  /** Which of the sessions with these hashes have not ended or expired (found in one query, however many). */
  readonly liveSessions: (hashes: ReadonlyArray<string>) => Effect.Effect<ReadonlySet<string>, StoreError>
  /** Ends the session with `secret` (signing out); nothing when there is none. */
  readonly endSession: (secret: string) => Effect.Effect<void, StoreError>
}>() {}

/** Token storage on the database's `SqlClient`. */
export const layer = Layer.effect(
  TokenStorage,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const byId = SqlSchema.findOne({
      Request: Schema.String,
      Result: TokenRecord,
      execute: (id) => sql`SELECT * FROM foundry_tokens WHERE id = ${id}`
    })
    const all = SqlSchema.findAll({
      Request: Schema.Void,
      Result: TokenRecord,
      execute: () => sql`SELECT * FROM foundry_tokens ORDER BY created_at, id`
    })
    const active = SqlSchema.single({
      Request: Schema.Void,
      Result: Schema.Struct({ count: Schema.Number }),
      execute: () => sql`SELECT COUNT(*) AS count FROM foundry_tokens WHERE revoked_at IS NULL`
    })

    const bySession = SqlSchema.findOne({
      Request: Schema.Struct({ hash: Schema.String, now: Schema.Number }),
      Result: Schema.Struct({ ...TokenRecord.fields, sessionExpiresAt: Schema.Number }),
      // The token's own row decides its revocation: a session ends with its token on every process at once.
      execute: ({ hash, now }) =>
        sql`SELECT t.*, s.expires_at AS session_expires_at FROM foundry_sessions s JOIN foundry_tokens t ON t.id = s.token_id
          WHERE s.hash = ${hash} AND s.expires_at > ${now} AND t.revoked_at IS NULL`
    })
    const live = SqlSchema.findAll({
      Request: Schema.Struct({ hashes: Schema.Array(Schema.String), now: Schema.Number }),
      Result: Schema.Struct({ hash: Schema.String }),
      execute: ({ hashes, now }) => sql`SELECT hash FROM foundry_sessions WHERE ${sql.in("hash", hashes)} AND expires_at > ${now}`
    })

    /** `found`, its use recorded (at most once per `lastUsedResolution`). */
    const used = (record: TokenRecord) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        if (record.lastUsedAt !== null && now - record.lastUsedAt < lastUsedResolution) return record
        yield* sql`UPDATE foundry_tokens SET last_used_at = ${now} WHERE id = ${record.id}`
        return TokenRecord.make({ ...record, lastUsedAt: now })
      })

    return TokenStorage.of({
      create: ({ name, scope }) =>
        Effect.gen(function*() {
          const issued = issueToken()
          const createdAt = yield* Clock.currentTimeMillis
          const record = TokenRecord.make({
            id: issued.id,
            name,
            scope,
            hash: hashToken(issued.token),
            createdAt,
            lastUsedAt: null,
            revokedAt: null
          })
          yield* sql`INSERT INTO foundry_tokens ${sql.insert({ ...record })}`
          return { record, token: issued.token }
        }).pipe(failAs("createToken")),

      list: all(undefined).pipe(failAs("listTokens")),

      revoke: (id) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          yield* sql`UPDATE foundry_tokens SET revoked_at = ${now} WHERE id = ${id} AND revoked_at IS NULL`
          // Its sessions no longer admit (their token is revoked); they are dropped so as not to be kept.
          yield* sql`DELETE FROM foundry_sessions WHERE token_id = ${id}`
          return yield* byId(id)
        }).pipe(failAs("revokeToken")),

      verify: (token) =>
        Effect.gen(function*() {
          const id = tokenId(token)
          if (Option.isNone(id)) return Option.none()
          // An unknown id answers sooner than a wrong secret, but ids are not secret: they are listed.
          const found = yield* byId(id.value)
          if (Option.isNone(found) || !matchesHash(token, found.value.hash) || found.value.revokedAt !== null) return Option.none()
          return Option.some(yield* used(found.value))
        }).pipe(failAs("verifyToken")),

      countActive: active(undefined).pipe(Effect.map(({ count }) => count), failAs("countTokens")),

      startSession: (id, lasting) =>
        Effect.gen(function*() {
          const secret = issueSessionSecret()
          const now = yield* Clock.currentTimeMillis
          const expiresAt = now + Duration.toMillis(lasting)
          // Sessions nobody signed out of would otherwise stay forever: each sign-in clears the expired ones.
          yield* sql`DELETE FROM foundry_sessions WHERE expires_at <= ${now}`
          yield* sql`INSERT INTO foundry_sessions ${sql.insert({ hash: hashToken(secret), tokenId: id, createdAt: now, expiresAt })}`
          return { secret, expiresAt }
        }).pipe(failAs("startSession")),

      verifySession: (secret) =>
        Effect.gen(function*() {
          if (!isSessionSecret(secret)) return Option.none()
          // Found by the secret's hash: no id to look up by, and the hash is what is unknown to a guesser.
          const hash = hashToken(secret)
          const found = yield* bySession({ hash, now: yield* Clock.currentTimeMillis })
          if (Option.isNone(found)) return Option.none()
          const { sessionExpiresAt, ...token } = found.value
          return Option.some({ token: yield* used(TokenRecord.make(token)), session: { hash, expiresAt: sessionExpiresAt } })
        }).pipe(failAs("verifySession")),

      liveSessions: (hashes) =>
        hashes.length === 0
          ? Effect.succeed(new Set<string>())
          : Effect.gen(function*() {
            const found = yield* live({ hashes, now: yield* Clock.currentTimeMillis })
            return new Set(found.map(({ hash }) => hash))
          }).pipe(failAs("liveSessions")),

      endSession: (secret) =>
        (isSessionSecret(secret) ? sql`DELETE FROM foundry_sessions WHERE hash = ${hashToken(secret)}` : Effect.void).pipe(
          Effect.asVoid,
          failAs("endSession")
        )
    })
  })
)
