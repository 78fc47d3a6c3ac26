/**
 * Serves the inspector: its page at every inspector path (so deep links load directly), its
 * stylesheet, and its script: prebuilt in `dist/inspector` when the framework runs built, else
 * bundled from `inspector/src` once per process with esbuild. Nothing is fetched from a CDN: the
 * inspector works offline.
 */
import { readFile } from "node:fs/promises"
import { join } from "node:path"
import { HttpApiBuilder, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { packageLayout } from "../../packageLayout.js"
import { prefersOverJson } from "../http/acceptWeights.js"

/**
 * The inspector's pages; each serves the same shell, and the client draws the page. Agent ids hold
 * slashes (so do instance pages, `<agent>/<id>`); a run's or a conversation's id never does, so
 * `/runs/a/b` is no page.
 */
const pages = [
  "/", "/agents", "/agents/*", "/instances", "/instances/*", "/conversations", "/conversations/:id", "/runs", "/runs/:id",
  "/approvals", "/schedules", "/playbooks", "/releases"
] as const

const layout = packageLayout.inspector

const file = (name: string) => Effect.tryPromise(() => readFile(join(layout.dir, name), "utf8"))

// esbuild is loaded only when the sources must be bundled: a built framework never needs it here.
const bundle = layout._tag === "Prebuilt"
  ? file("inspector.js")
  : Effect.tryPromise(() =>
    import("./bundleInspector.js").then(({ bundleInspector }) => bundleInspector(layout.dir, false))
  )

/** The page every inspector path serves (the client draws which), read once per process. */
const shell = Effect.runSync(Effect.cached(file("index.html").pipe(Effect.orDie)))

/** Paths that belong to machines (the API, MCP, webhooks, OpenAI's clients, assets), never to the inspector's pages. */
const machinePath = /^\/(api|v1|mcp|hooks|assets|health)(\/|$)/

/**
 * What a path that is no route answers a browser asking for a page: the inspector, which says
 * there is no such page and keeps its navigation (a 404 all the same). Clients of the API get its
 * JSON error instead (by `Accept`'s weights: a client that weighs JSON more gets JSON), as does
 * anyone under a machine's path.
 */
export const pageNotFound = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<HttpServerResponse.HttpServerResponse> | undefined =>
  (request.method === "GET" || request.method === "HEAD") && prefersOverJson(request.headers.accept, "text/html") &&
    !machinePath.test(request.url)
    ? Effect.map(shell, (html) => HttpServerResponse.text(html, { status: 404, contentType: "text/html; charset=utf-8" }))
    : undefined

/** The inspector's routes on the API's router. */
export const InspectorLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const script = yield* Effect.cached(bundle.pipe(Effect.orDie))
    const style = yield* Effect.cached(file("inspector.css").pipe(Effect.orDie))
    const page = Effect.map(shell, (html) => HttpServerResponse.text(html, { contentType: "text/html; charset=utf-8" }))
    for (const path of pages) yield* router.get(path, page)
    yield* router.get(
      "/assets/inspector.js",
      Effect.map(script, (js) => HttpServerResponse.text(js, { contentType: "text/javascript; charset=utf-8" }))
    )
    yield* router.get(
      "/assets/inspector.css",
      Effect.map(style, (css) => HttpServerResponse.text(css, { contentType: "text/css; charset=utf-8" }))
    )
  })
)
