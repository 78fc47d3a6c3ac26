/**
 * A test HTTP server's lifetime on loopback: listening on a free port, and closing even while a
 * test has left streams open.
 */
import type { Server } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"

/** Listens on 127.0.0.1 and a free port; the port. */
export const listen = (server: Server) =>
  Effect.async<number, Error>((resume) => {
    server.once("error", (cause) => resume(Effect.fail(cause)))
    server.listen(0, "127.0.0.1", () => {
      const address: AddressInfo | string | null = server.address()
      resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : 0))
    })
  })

/** Closes the server, cutting the connections a test abandoned (they would keep it open). */
export const close = (server: Server) =>
  Effect.async<void>((resume) => {
    server.closeAllConnections()
    server.close(() => resume(Effect.void))
  })
