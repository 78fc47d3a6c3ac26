/**
 * `/api/tokens`: API tokens, made, listed and revoked (admin scope); and `/api/session`, where
 * the inspector signs in with a token and gets a session cookie (a session of its own, not the token).
 */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { Unauthorized } from "../../../auth/accessErrors.js"
import { TokenScope, tokenScopes } from "../../../auth/TokenScope.js"
import { strictBody } from "./strictBody.js"

/** A token as the API shows it: never its secret, which only its creation returns. */
export const TokenView = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  scope: TokenScope,
  createdAt: Schema.Number,
  lastUsedAt: Schema.NullOr(Schema.Number),
  revokedAt: Schema.NullOr(Schema.Number)
})

/** The body of `POST /api/tokens`. */
export const CreateToken = Schema.Struct({
  scope: TokenScope.annotations({ message: () => `expected one of ${tokenScopes.map((s) => `"${s}"`).join(", ")}` }),
  name: Schema.optional(Schema.String.pipe(Schema.pattern(/^[^\p{Cc}]{1,100}$/u, {
    message: () => "expected 1-100 characters, no control characters"
  })))
}).annotations(strictBody)

/** The answer to `POST /api/tokens`: the token's text, shown this once and never again. */
export const TokenCreated = Schema.Struct({ ...TokenView.fields, token: Schema.String })

/** There is no token with that id. */
export class TokenNotFound extends Schema.TaggedError<TokenNotFound>()("TokenNotFound", {
  message: Schema.String
}) {}

/** The body of `POST /api/session`. */
export const SignIn = Schema.Struct({ token: Schema.String }).annotations(strictBody)

/**
 * Who `GET /api/session` says the caller is: whether the server needs tokens, and the token the
 * caller sent or signed in with, if any. Public: without a token or session it tells only the mode.
 */
export const SessionView = Schema.Struct({
  mode: Schema.Literal("open", "tokens"),
  token: Schema.NullOr(TokenView)
})

/** The tokens group. */
export class TokensGroup extends HttpApiGroup.make("tokens")
  .add(HttpApiEndpoint.get("list", "/api/tokens").addSuccess(Schema.Array(TokenView)))
  .add(HttpApiEndpoint.post("create", "/api/tokens").setPayload(CreateToken).addSuccess(TokenCreated, { status: 201 }))
  .add(
    HttpApiEndpoint.del("revoke", "/api/tokens/:tokenId")
      .setPath(Schema.Struct({ tokenId: Schema.String }))
      .addSuccess(TokenView)
      .addError(TokenNotFound, { status: 404 })
  )
  .add(HttpApiEndpoint.get("session", "/api/session").addSuccess(SessionView).addError(Unauthorized))
  .add(HttpApiEndpoint.post("signIn", "/api/session").setPayload(SignIn).addError(Unauthorized))
  .add(HttpApiEndpoint.del("signOut", "/api/session"))
{}
