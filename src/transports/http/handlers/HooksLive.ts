/**
 * The hooks group's handler: the raw body (signatures are over its exact bytes) to the webhooks.
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { Auth } from "../../../auth/Auth.js"
import { knockOf } from "../../../auth/authMiddleware.js"
import { serverSessionCookie } from "../../../auth/sessionCookie.js"
import { allows } from "../../../auth/TokenScope.js"
import { Webhooks } from "../../../triggers/Webhooks.js"
import { FoundryApi } from "../api/FoundryApi.js"
import { orStoreUnavailable } from "./storeUnavailable.js"

/** When a sender whose event is still being delivered, or not taken yet, should try again, in seconds. */
const retryAfterSeconds = 5

/** An answer that asks the sender to send the event again later. */
const retryLater = (status: number, body: Readonly<Record<string, string>>) =>
  HttpServerResponse.json(body, { status, headers: { "retry-after": String(retryAfterSeconds) } }).pipe(Effect.orDie)

/** Handlers for `/hooks`. */
export const HooksLive = HttpApiBuilder.group(FoundryApi, "hooks", (handlers) =>
  Effect.gen(function*() {
    const webhooks = yield* Webhooks
    const auth = yield* Auth
    const cookie = yield* serverSessionCookie
    return handlers.handleRaw("deliver", ({ path }) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const body = yield* Effect.orDie(request.text)
        // Unsigned deliveries only where the door is open, or with a token that may start runs.
        const vouched = auth.mode === "open" ||
          Option.exists(yield* auth.identify(knockOf(request, cookie)).pipe(orStoreUnavailable), (token) => allows(token.scope, "run"))
        const result = yield* webhooks.deliver(path.name, body, request.headers, vouched).pipe(orStoreUnavailable)
        return yield* HttpServerResponse.json(result, { status: result.duplicate ? 200 : 202 }).pipe(Effect.orDie)
      }).pipe(
        // 409, not 202: the first attempt's runs are not known yet, and if it never finishes the
        // sender must not believe the event delivered.
        Effect.catchTags({
          DeliveryInProgress: (error) => retryLater(409, { _tag: error._tag, deliveryId: error.deliveryId, message: error.message }),
          WebhookNotServed: (error) => retryLater(503, { _tag: error._tag, webhook: error.webhook, message: error.message })
        })
      ))
  }))
