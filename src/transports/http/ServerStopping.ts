/**
 * The moment the HTTP server stops. Node's `server.close` waits for every connection to end, and
 * an event stream never ends on its own: a server with an inspector tab open (or any client
 * following a run or the feed) ignored Ctrl-C and its process manager's SIGTERM until the client
 * went. Event streams end when the server stops (their clients reconnect, to the next server);
 * whatever else is still open a moment later is cut.
 */
import { createServer, type Server } from "node:http"
import type { ListenOptions } from "node:net"
import { HttpServer } from "@effect/platform"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Context, Effect, Layer } from "effect"

/** How long the requests in flight when the server stops have to finish before their connections are cut. */
const cutAfterMs = 3000

export class ServerStopping extends Context.Tag("foundry/ServerStopping")<ServerStopping, {
  /** Calls `end` when the server stops (at once if it has); returns what takes that back. */
  readonly onStop: (end: () => void) => () => void
  /** Succeeds when the server stops. */
  readonly stopped: Effect.Effect<void>
  /** Says the server stops: what waits for it ends. */
  readonly stop: Effect.Effect<void>
}>() {}

/** The signal, for the handlers and the server. */
export const layer: Layer.Layer<ServerStopping> = Layer.sync(ServerStopping, () => {
  // Plain callbacks, not fibers waiting: every follower of a run over HTTP registers one.
  const ends = new Set<() => void>()
  let stopping = false
  const onStop = (end: () => void): () => void => {
    if (stopping) {
      end()
      return () => {}
    }
    ends.add(end)
    return () => ends.delete(end)
  }
  return ServerStopping.of({
    onStop,
    stopped: Effect.async<void>((resume) => Effect.sync(onStop(() => resume(Effect.void)))),
    stop: Effect.sync(() => {
      stopping = true
      for (const end of ends) {
        try {
          end()
        } catch {
          // One stream that fails to end is cut with the rest of what is left open.
        }
      }
      ends.clear()
    })
  })
})

/** Node's HTTP server listening as `listen` says, with what `NodeHttpServer.layer` gives beside it, stopping as this module says. */
export const nodeServer = (listen: ListenOptions) =>
  Layer.mergeAll(
    Layer.scoped(
      HttpServer.HttpServer,
      Effect.gen(function*() {
        const stopping = yield* ServerStopping
        let node: Server | undefined
        const server = yield* NodeHttpServer.make(() => (node = createServer()), listen)
        // Added after the server's own finalizer (which closes it and waits for its connections), so run before it.
        yield* Effect.addFinalizer(() =>
          Effect.zipRight(
            Effect.sync(() => {
              if (node === undefined) return
              const server = node
              // An event stream's connection goes idle a moment after the stream ends (kept alive for
              // the client's next request), and `close` closes the idle ones only once, as it is called.
              const idle = setInterval(() => server.closeIdleConnections(), 20)
              const cut = setTimeout(() => server.closeAllConnections(), cutAfterMs)
              idle.unref()
              cut.unref()
              server.once("close", () => {
                clearInterval(idle)
                clearTimeout(cut)
              })
            }),
            stopping.stop
          )
        )
        return server
      })
    ),
    NodeHttpServer.layerContext
  )
