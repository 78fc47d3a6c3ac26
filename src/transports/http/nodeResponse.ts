/**
 * The Node response a request is answered on, for a handler that writes into it itself (a run's
 * event stream: `sse.ts`). A request's own, unless the edge read its chunked body and handed the
 * app a request made of that body (`bodyLimit.ts`), which has none: then the one the original
 * came with.
 */
import type { ServerResponse } from "node:http"
import type { HttpServerRequest } from "@effect/platform"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Effect, FiberRef, Option } from "effect"

/** The Node response of the request the edge replaced, while its app runs. */
export const currentNodeResponse: FiberRef.FiberRef<Option.Option<ServerResponse>> = FiberRef.unsafeMake(Option.none<ServerResponse>())

/** The Node response `request` is answered on. */
export const nodeResponseOf = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<ServerResponse> =>
  Effect.map(FiberRef.get(currentNodeResponse), Option.getOrElse(() => NodeHttpServerRequest.toServerResponse(request)))
