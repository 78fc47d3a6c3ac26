/**
 * The API's OpenAPI document at `/api/openapi.json`, made at its first request. Platform's
 * `middlewareOpenApi` makes it as the server starts: reflecting every endpoint's schemas took 60
 * to 140 ms of each `foundry start`'s and `foundry dev`'s start, for a document few ask for.
 */
import { HttpApi, HttpApiBuilder, HttpServerResponse, OpenApi } from "@effect/platform"
import { Effect } from "effect"
import { namingSessionCookie } from "../../auth/openApiSecurity.js"
import { serverSessionCookie } from "../../auth/sessionCookie.js"

/** `GET /api/openapi.json`: the document of the API the server serves, made once, when first asked. */
export const openApiDocument = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const { api } = yield* HttpApi.Api
    const cookie = yield* serverSessionCookie
    const response = yield* Effect.cached(
      Effect.suspend(() => HttpServerResponse.json(namingSessionCookie(OpenApi.fromApi(api), cookie))).pipe(Effect.orDie)
    )
    yield* router.get("/api/openapi.json", response)
  })
)
