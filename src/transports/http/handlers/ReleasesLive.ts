/**
 * The releases group's handlers, over `Deployments`; a change is recorded as made by the token
 * that asked for it.
 */
import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { Effect, Option } from "effect"
import { Auth } from "../../../auth/Auth.js"
import { knockOf } from "../../../auth/authMiddleware.js"
import { serverSessionCookie } from "../../../auth/sessionCookie.js"
import { Deployments } from "../../../release/Deployments.js"
import { FoundryApi } from "../api/FoundryApi.js"
import { orStoreUnavailable } from "./storeUnavailable.js"

/** Handlers for `/api/releases`. */
export const ReleasesLive = HttpApiBuilder.group(FoundryApi, "releases", (handlers) =>
  Effect.gen(function*() {
    const deployments = yield* Deployments
    const auth = yield* Auth
    const cookie = yield* serverSessionCookie
    // On a server open without tokens nobody is named: `null`.
    const caller = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      Effect.map(auth.identify(knockOf(request, cookie)), Option.match({ onNone: () => null, onSome: (token) => token.id })))
    return handlers
      .handle("list", () => deployments.list.pipe(orStoreUnavailable))
      .handle("history", ({ urlParams }) => deployments.history(urlParams.limit ?? 50).pipe(orStoreUnavailable))
      .handle("deploy", ({ payload }) => Effect.flatMap(caller, (by) => deployments.deploy(payload, by)).pipe(orStoreUnavailable))
      .handle("activate", ({ path }) =>
        Effect.flatMap(caller, (by) => deployments.activate(path.releaseId, by)).pipe(orStoreUnavailable))
  }))
