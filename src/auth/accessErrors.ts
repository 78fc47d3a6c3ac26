/**
 * Why a request was not let through: no valid token (401), a token whose scope is too small
 * (403), or a token over its rate limit (429). The auth middleware answers them before any route
 * runs; the OpenAPI document declares them on every route that needs a token.
 */
import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { TokenScope } from "./TokenScope.js"

/** No token, or one the store does not know or has revoked. */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()(
  "Unauthorized",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 401, description: "No token was sent, or the token is unknown or revoked" })
) {}

/** A valid token whose scope does not include what the route needs. */
export class Forbidden extends Schema.TaggedError<Forbidden>()(
  "Forbidden",
  { message: Schema.String, required: TokenScope, scope: TokenScope },
  HttpApiSchema.annotations({ status: 403, description: "The token's scope does not include the scope the route needs" })
) {}

/** A token that sent more requests than its rate limit allows; `retryAfter` in whole seconds. */
export class RateLimited extends Schema.TaggedError<RateLimited>()(
  "RateLimited",
  { message: Schema.String, retryAfter: Schema.Number },
  HttpApiSchema.annotations({ status: 429, description: "Too many requests with this token; retry after the Retry-After header's seconds" })
) {}

/** Any reason a request is refused at the door. */
export type AccessDenied = Unauthorized | Forbidden | RateLimited
