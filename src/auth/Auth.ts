/**
 * The door of the HTTP server: decides at start whether requests need tokens (see `accessMode`),
 * then admits each request or says why not. A request is admitted when its route is public, or
 * when it carries a valid token (as `Authorization: Bearer <token>`), or the inspector's session
 * cookie of a session signed in with one, whose scope includes what the route needs and that is
 * within its rate limit. A session is taken only from its cookie, a token only as a bearer.
 */
import * as RateLimiter from "@effect/experimental/RateLimiter"
import { Context, Duration, Effect, Layer, Option } from "effect"
import type { StoreError } from "../durable/StoreError.js"
import { type AccessDenied, Forbidden, RateLimited, Unauthorized } from "./accessErrors.js"
import { type AccessMode, accessMode, exposedNames, isExposed } from "./accessMode.js"
import { routeAccess } from "./routeAccess.js"
import { type SessionRecord, type TokenRecord, TokenStorage } from "./TokenStorage.js"
import { sendsFoundryToken } from "./token.js"
import { allows, tokenScopes } from "./TokenScope.js"

/** What the door looks at in a request. */
export interface Knock {
  readonly method: string
  /** The path and query, as the request line has them. */
  readonly url: string
  /** The `Authorization` header, if any. */
  readonly authorization: string | undefined
  /** The inspector's session cookie (the session's secret, never a token), if any. */
  readonly session: string | undefined
  /** The request names a proxy's forwarding (`Forwarded`, `X-Forwarded-For`, ...): it may come from beyond this machine. */
  readonly proxied: boolean
}

/** The settings the door is built from: where the server listens and the config's `auth`. */
export interface AuthSettings {
  readonly host: string
  /** `server.allowedHosts`: names a proxy may reach the server by. */
  readonly allowedHosts: ReadonlyArray<string>
  readonly required: boolean
  readonly rateLimit: { readonly requests: number; readonly per: Duration.DurationInput }
}

/** What a request was admitted on: its token, and the inspector's session it came with, if any. */
export interface Admission {
  readonly tokenId: string
  readonly session: Option.Option<SessionRecord>
}

/** The door. */
export class Auth extends Context.Tag("foundry/Auth")<Auth, {
  readonly mode: AccessMode
  /**
   * Succeeds when the request may go on to its route, with the token it was admitted on and its
   * session (none: a public route, or an open door's request without a Foundry token).
   */
  readonly admit: (knock: Knock) => Effect.Effect<Option.Option<Admission>, AccessDenied | StoreError>
  /** The valid token a request carries, if any, whatever its route needs. */
  readonly identify: (knock: Knock) => Effect.Effect<Option.Option<TokenRecord>, StoreError>
}>() {}

const howToGetOne = `create one with \`foundry token create --scope ${tokenScopes.join("|")}\``

/** What a request authenticates with: a bearer token, or the inspector's session. */
type Credential = { readonly _tag: "Bearer"; readonly token: string } | { readonly _tag: "Session"; readonly secret: string }

/** What a request authenticates with: the bearer token first, else the session cookie. */
const presented = (knock: Knock): Effect.Effect<Credential, Unauthorized> => {
  if (knock.authorization !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(knock.authorization)
    return match?.[1] === undefined
      ? Effect.fail(new Unauthorized({ message: `the Authorization header must be \`Bearer <token>\`; ${howToGetOne}` }))
      : Effect.succeed({ _tag: "Bearer", token: match[1] })
  }
  if (knock.session !== undefined && knock.session !== "") return Effect.succeed({ _tag: "Session", secret: knock.session })
  return Effect.fail(
    new Unauthorized({ message: `this server needs an API token: send \`Authorization: Bearer <token>\`; ${howToGetOne}` })
  )
}

/** The door for a server on `settings.host`; fails with `AccessRefused` when it must not start. */
export const layer = (settings: AuthSettings) =>
  Layer.effect(
    Auth,
    Effect.gen(function*() {
      const tokens = yield* TokenStorage
      const limiter = yield* RateLimiter.RateLimiter
      // Only a server reachable beyond loopback depends on the store's tokens; loopback starts without asking it.
      const exposedAs = exposedNames(settings.allowedHosts)
      const activeTokens = isExposed(settings.host, exposedAs) ? yield* tokens.countActive : 0
      const mode = yield* accessMode({ host: settings.host, exposedAs, required: settings.required, activeTokens })
      const per = Duration.decode(settings.rateLimit.per)

      const withinLimit = (tokenId: string) =>
        limiter.consume({ algorithm: "token-bucket", onExceeded: "fail", window: per, limit: settings.rateLimit.requests, key: tokenId }).pipe(
          Effect.catchAll((error) =>
            error instanceof RateLimiter.RateLimitExceeded
              ? Effect.fail(
                new RateLimited({
                  message: `token ${tokenId} sent more than ${settings.rateLimit.requests} requests per ${Duration.format(per)}; ` +
                    "retry after the Retry-After header's seconds, or raise auth.rateLimit in foundry.config.ts",
                  retryAfter: Math.max(1, Math.ceil(Duration.toSeconds(error.retryAfter)))
                })
              )
              // The limiter's store is in memory: it has no failure of its own to report.
              : Effect.die(error))
        )

      // A session's secret is checked only as a session, a token only as a token: neither passes for the other.
      const verify = (credential: Credential): Effect.Effect<Option.Option<{ readonly token: TokenRecord; readonly session: Option.Option<SessionRecord> }>, StoreError> =>
        credential._tag === "Bearer"
          ? Effect.map(tokens.verify(credential.token), Option.map((token) => ({ token, session: Option.none() })))
          : Effect.map(tokens.verifySession(credential.secret), Option.map(({ session, token }) => ({ token, session: Option.some(session) })))

      const admit = Effect.fn("Auth.admit")(function*(knock: Knock) {
        // Open: only a request that sends a Foundry token is held to it (an OpenAI client's key is
        // none of Foundry's; the session cookie is the inspector's, which signs in only where
        // tokens are needed).
        if (mode === "open" && knock.proxied) {
          return yield* new Unauthorized({
            message: "this request came through a proxy (it has a forwarding header), and this server is open to loopback only: " +
              "to serve beyond this machine, set auth: { required: true } in foundry.config.ts, " + howToGetOne + ", and restart"
          })
        }
        if (mode === "open" && !sendsFoundryToken(knock.authorization)) return Option.none()
        const needed = routeAccess(knock.method, knock.url)
        if (needed === "public") return Option.none()
        const credential = yield* presented(knock)
        const found = yield* verify(credential)
        if (Option.isNone(found)) {
          return yield* new Unauthorized({
            message: credential._tag === "Bearer"
              ? `the token is unknown or revoked; ${howToGetOne}`
              : "the session has ended (signed out, expired, or its token revoked): sign in again with a token"
          })
        }
        const { id, scope } = found.value.token
        if (!allows(scope, needed)) {
          return yield* new Forbidden({
            message: `${knock.method} ${knock.url.split("?", 1)[0]} needs a token with scope "${needed}"; ` +
              `token ${id} has scope "${scope}": use a token with a scope that includes "${needed}"`,
            required: needed,
            scope
          })
        }
        yield* withinLimit(id)
        return Option.some<Admission>({ tokenId: id, session: found.value.session })
      })

      const identify = (knock: Knock) =>
        presented(knock).pipe(
          Effect.option,
          Effect.flatMap(Option.match({ onNone: () => Effect.succeedNone, onSome: verify })),
          Effect.map(Option.map(({ token }) => token))
        )

      return Auth.of({ mode, admit, identify })
    })
  ).pipe(Layer.provide(RateLimiter.layer.pipe(Layer.provide(RateLimiter.layerStoreMemory))))
