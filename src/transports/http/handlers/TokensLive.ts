/**
 * The tokens group's handlers: the admin API over `TokenStorage`, and the inspector's sign-in,
 * which checks a token and leaves it in the session cookie.
 */
import { HttpApiBuilder, HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { Unauthorized } from "../../../auth/accessErrors.js"
import { Auth } from "../../../auth/Auth.js"
import { knockOf } from "../../../auth/authMiddleware.js"
import { sessionCookie, sessionCookieOptions } from "../../../auth/sessionCookie.js"
import { TokenRevocations } from "../../../auth/TokenRevocations.js"
import { type TokenRecord, TokenStorage } from "../../../auth/TokenStorage.js"
import { FoundryApi } from "../api/FoundryApi.js"
import { TokenNotFound } from "../api/TokensGroup.js"
import { orStoreUnavailable } from "./storeUnavailable.js"

const tokenView = ({ createdAt, id, lastUsedAt, name, revokedAt, scope }: TokenRecord) => ({
  id,
  name,
  scope,
  createdAt,
  lastUsedAt,
  revokedAt
})

/** Handlers for `/api/tokens` and `/api/session`. */
export const TokensLive = HttpApiBuilder.group(FoundryApi, "tokens", (handlers) =>
  Effect.gen(function*() {
    const tokens = yield* TokenStorage
    const auth = yield* Auth
    const revocations = yield* TokenRevocations
    return handlers
      .handle("list", () => tokens.list.pipe(Effect.map((found) => found.map(tokenView)), orStoreUnavailable))
      .handle("create", ({ payload }) =>
        tokens.create({ name: payload.name ?? "", scope: payload.scope }).pipe(
          Effect.map(({ record, token }) => ({ ...tokenView(record), token })),
          orStoreUnavailable
        ))
      .handle("revoke", ({ path }) =>
        revocations.revoke(path.tokenId).pipe(
          Effect.flatMap(Option.match({
            onNone: () => Effect.fail(new TokenNotFound({ message: `there is no token ${path.tokenId}; see GET /api/tokens` })),
            onSome: (record) => Effect.succeed(tokenView(record))
          })),
          orStoreUnavailable
        ))
      .handle("session", () =>
        Effect.gen(function*() {
          const caller = yield* auth.identify(knockOf(yield* HttpServerRequest.HttpServerRequest))
          return { mode: auth.mode, token: Option.match(caller, { onNone: () => null, onSome: tokenView }) }
        }).pipe(orStoreUnavailable))
      .handle("signIn", ({ payload }) =>
        tokens.verify(payload.token).pipe(
          Effect.flatMap(Option.match({
            onNone: () => Effect.fail(new Unauthorized({ message: "the token is unknown or revoked; create one with `foundry token create`" })),
            onSome: () => HttpApiBuilder.securitySetCookie(sessionCookie, payload.token, sessionCookieOptions)
          })),
          orStoreUnavailable
        ))
      .handle("signOut", () =>
        HttpApp.appendPreResponseHandler((_request, response) =>
          Effect.succeed(HttpServerResponse.expireCookie(response, sessionCookie.key, sessionCookieOptions))))
  }))
