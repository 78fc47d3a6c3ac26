/**
 * Serves the inspector: its page at every inspector path (so deep links load directly), its
 * stylesheet, and its script, bundled from `inspector/src` once per process with esbuild. Nothing
 * is fetched from a CDN: the inspector works offline.
 */
import { readFile } from "node:fs/promises"
import { fileURLToPath } from "node:url"
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { build } from "esbuild"
import { Effect } from "effect"

const folder = fileURLToPath(new URL("../../../inspector/", import.meta.url))

/** The inspector's pages; each serves the same shell, and the client draws the page. */
const pages = ["/", "/agents", "/agents/*", "/conversations", "/conversations/*", "/runs", "/runs/*", "/approvals", "/schedules", "/playbooks"] as const

const bundle = Effect.tryPromise(() =>
  build({
    entryPoints: [`${folder}src/main.ts`],
    bundle: true,
    write: false,
    format: "esm",
    target: "es2022",
    minify: true,
    sourcemap: "inline",
    logLevel: "silent"
  }).then((result) => result.outputFiles[0]?.text ?? "")
)

const file = (name: string) => Effect.tryPromise(() => readFile(`${folder}${name}`, "utf8"))

/** The inspector's routes on the API's router. */
export const InspectorLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const script = yield* Effect.cached(bundle.pipe(Effect.orDie))
    const shell = yield* Effect.cached(file("index.html").pipe(Effect.orDie))
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
