/**
 * The tokens group's handlers: the admin API over `TokenStorage`, and the inspector's sign-in,
 * which checks a token and starts a session of its own, whose secret (never the token) it leaves in
 * this server's session cookie; signing out ends the session in the store.
 */
import { HttpApiBuilder, HttpApiSecurity, HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { Unauthorized } from "../../../auth/accessErrors.js"
import { Auth } from "../../../auth/Auth.js"
import { knockOf } from "../../../auth/authMiddleware.js"
import { legacySessionCookie, serverSessionCookie, sessionCookieOptions, sessionLifetime } from "../../../auth/sessionCookie.js"
import { sendsFoundryToken } from "../../../auth/token.js"
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
    const cookie = yield* serverSessionCookie
    // The cookie of before sessions held the token itself: a browser that still sends it is told to drop it.
    const expired = (request: HttpServerRequest.HttpServerRequest, names: ReadonlyArray<string>) => {
      const present = request.cookies[legacySessionCookie] === undefined ? names : [...names, legacySessionCookie]
      return HttpApp.appendPreResponseHandler((_request, response) =>
        Effect.succeed(present.reduce((answer, name) => HttpServerResponse.expireCookie(answer, name, sessionCookieOptions), response)))
    }
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
          const knock = knockOf(yield* HttpServerRequest.HttpServerRequest, cookie)
          const caller = yield* auth.identify(knock)
          // Public, to say the mode; a token sent that is not valid is refused, as anywhere it is held to
          // (an OpenAI client's key on an open server is none of Foundry's). A session that ended is just no caller.
          const heldTo = knock.authorization !== undefined && (auth.mode === "tokens" || sendsFoundryToken(knock.authorization))
          if (Option.isNone(caller) && heldTo) {
            return yield* new Unauthorized({ message: "the token is unknown or revoked; create one with `foundry token create`" })
          }
          return { mode: auth.mode, token: Option.match(caller, { onNone: () => null, onSome: tokenView }) }
        }).pipe(orStoreUnavailable))
      .handle("signIn", ({ payload }) =>
        Effect.gen(function*() {
          const found = yield* tokens.verify(payload.token)
          if (Option.isNone(found)) {
            return yield* new Unauthorized({ message: "the token is unknown or revoked; create one with `foundry token create`" })
          }
          const session = yield* tokens.startSession(found.value.id, sessionLifetime)
          yield* expired(yield* HttpServerRequest.HttpServerRequest, [])
          yield* HttpApiBuilder.securitySetCookie(HttpApiSecurity.apiKey({ in: "cookie", key: cookie }), session.secret, {
            ...sessionCookieOptions,
            maxAge: sessionLifetime
          })
        }).pipe(orStoreUnavailable))
      .handle("signOut", () =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const secret = request.cookies[cookie]
          // Ended through the revocations, so what the session keeps open here (an event stream) ends with it.
          if (secret !== undefined) yield* revocations.endSession(secret)
          yield* expired(request, [cookie])
        }).pipe(orStoreUnavailable))
  }))
