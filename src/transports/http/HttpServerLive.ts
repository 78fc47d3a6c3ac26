/**
 * The HTTP server: the native API (with its OpenAPI document at `/api/openapi.json`) on Node's
 * http server. Binds to loopback unless told otherwise.
 */
import { Etag, FileSystem, HttpApiBuilder, HttpIncomingMessage, HttpMiddleware, HttpPlatform, HttpRouter, HttpServer, Path } from "@effect/platform"
import { Context, Effect, Layer, Option, Scope } from "effect"
import { authMiddleware } from "../../auth/authMiddleware.js"
import { FoundryApi } from "./api/FoundryApi.js"
import { ApprovalsLive } from "./handlers/ApprovalsLive.js"
import { CapabilitiesLive } from "./handlers/CapabilitiesLive.js"
import { ClusterLive } from "./handlers/ClusterLive.js"
import { ConversationsLive } from "./handlers/ConversationsLive.js"
import { EnvironmentsLive } from "./handlers/EnvironmentsLive.js"
import { EventsLive } from "./handlers/EventsLive.js"
import { HooksLive } from "./handlers/HooksLive.js"
import { InstancesLive } from "./handlers/InstancesLive.js"
import { ReleasesLive } from "./handlers/ReleasesLive.js"
import { SchedulesHttpLive } from "./handlers/SchedulesLive.js"
import { RunsLive } from "./handlers/RunsLive.js"
import { SystemLive } from "./handlers/SystemLive.js"
import { TokensLive } from "./handlers/TokensLive.js"
import { UsageLive } from "./handlers/UsageLive.js"
import { InspectorLive } from "../inspector/InspectorLive.js"
import * as McpServerLive from "../mcp/McpServerLive.js"
import { OpenAiLive } from "../openai/OpenAiLive.js"
import { readableErrors } from "./readableErrors.js"
import { refuseUnknownQueryParams } from "./unknownQueryParams.js"
import { edge } from "./edge/Edge.js"
import { openApiDocument } from "./openApiDocument.js"
import * as ServerStopping from "./ServerStopping.js"

/** The API with every group implemented. */
export const ApiLive = HttpApiBuilder.api(FoundryApi).pipe(
  Layer.provide([RunsLive, ConversationsLive, InstancesLive, CapabilitiesLive, ApprovalsLive, EventsLive, HooksLive, SchedulesHttpLive, SystemLive, UsageLive, ClusterLive, TokensLive, ReleasesLive, EnvironmentsLive, OpenAiLive])
)

/** What a request's fiber starts with: the platform's services, and the signal the event streams end on. */
const requestServices = [
  Scope.Scope,
  HttpServer.HttpServer,
  HttpPlatform.HttpPlatform,
  FileSystem.FileSystem,
  Path.Path,
  Etag.Generator,
  HttpIncomingMessage.MaxBodySize,
  ServerStopping.ServerStopping
] as const

/**
 * `HttpApiBuilder.serve`, each request's fiber started with the few services a request reads from
 * its own context instead of the server's whole (46 services): the platform copies a request's
 * context as it adds the request, its scope and its route to it, and the copies of a run's event
 * stream live as long as the run. A handler reads the services of its group (which the builder
 * merges into each request), and routes and middleware are typed to read no more than the
 * request and its scope (`HttpRouter.DefaultServices`).
 */
const serve = Layer.scopedDiscard(Effect.gen(function*() {
  const app = yield* HttpApiBuilder.httpApp
  const kept = Context.pick(...requestServices)(yield* Effect.context<Context.Tag.Identifier<(typeof requestServices)[number]>>())
  yield* HttpServer.serveEffect(app).pipe(Effect.mapInputContext((_: Context.Context<never>) => kept))
})).pipe(Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer]))

/** Serves the API on `host:port` (port 0 picks a free one), reading request bodies up to `bodyLimit` bytes. */
export const layer = (options: {
  readonly port: number
  readonly host: string
  readonly bodyLimit: number
  /** `server.allowedHosts` as the server started: whether it needs tokens was decided by them. */
  readonly allowedHosts: ReadonlyArray<string>
}) =>
  serve.pipe(
    // An id in a path may be as long as its API allows (a conversation's up to 200 characters,
    // three times that percent-encoded); the router's default refused any over 100. Paths match as
    // written, as the door decides access by them (`routeAccess`): by its default the router served
    // `/API/TOKENS` as `/api/tokens`, which the door took for a path needing `run`, not `admin`.
    Layer.provide(HttpRouter.setRouterConfig({ maxParamLength: 1024, caseSensitive: true })),
    // Bodies are read at most this large (the edge answers a larger one 413 before reading it), the
    // body read again to explain a failure too: provided once to the server rather than to each
    // request, where it copied the request's whole context (25 Effect operations a request).
    Layer.provide(Layer.succeed(HttpIncomingMessage.MaxBodySize, Option.some(FileSystem.Size(options.bodyLimit)))),
    Layer.provide(HttpApiBuilder.middleware(
      FoundryApi,
      Effect.map(edge(options), (atEdge) => (app) => atEdge(readableErrors(options.bodyLimit)(app)))
    )),
    // Provided after the middleware above, so it is added first and runs inside it, before any route.
    Layer.provide(HttpApiBuilder.middleware(FoundryApi, authMiddleware)),
    // Inside the auth check: a client without a token is told that first.
    Layer.provide(HttpApiBuilder.middleware(FoundryApi, refuseUnknownQueryParams(FoundryApi))),
    Layer.provide(openApiDocument),
    Layer.provide(InspectorLive),
    Layer.provide(McpServerLive.layer()),
    Layer.provide(ApiLive),
    Layer.provideMerge(ServerStopping.nodeServer({ port: options.port, host: options.host })),
    // One signal for the server that gives it and the event streams that end on it.
    Layer.provide(ServerStopping.layer),
    // No Effect span per request: nothing records Effect's spans (Foundry's traces are its events,
    // exported over OTLP), and making one parses the URL and copies every header for nobody.
    HttpMiddleware.withTracerDisabledWhen(() => true)
  )
