/**
 * API tokens in the store: made, listed, revoked, and checked on every authenticated request.
 * Only a hash of each token is stored (see `token.ts`).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { failAs, type StoreError } from "../durable/StoreError.js"
import { hashToken, issueToken, matchesHash, tokenId } from "./token.js"
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
          return yield* byId(id)
        }).pipe(failAs("revokeToken")),

      verify: (token) =>
        Effect.gen(function*() {
          const id = tokenId(token)
          if (Option.isNone(id)) return Option.none()
          // An unknown id answers sooner than a wrong secret, but ids are not secret: they are listed.
          const found = yield* byId(id.value)
          if (Option.isNone(found) || !matchesHash(token, found.value.hash) || found.value.revokedAt !== null) return Option.none()
          const now = yield* Clock.currentTimeMillis
          const record = found.value
          if (record.lastUsedAt !== null && now - record.lastUsedAt < lastUsedResolution) return found
          yield* sql`UPDATE foundry_tokens SET last_used_at = ${now} WHERE id = ${record.id}`
          return Option.some(TokenRecord.make({ ...record, lastUsedAt: now }))
        }).pipe(failAs("verifyToken")),

      countActive: active(undefined).pipe(Effect.map(({ count }) => count), failAs("countTokens"))
    })
  })
)
