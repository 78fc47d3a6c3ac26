/**
 * A TCP proxy on loopback to the server of a PostgreSQL URL, for the test's scope, that decides
 * connection by connection what passes each way: to break a connection in the ways a network does
 * (cut after a given message, or silent without a word).
 */
import { connect as connectTcp, createServer, type Socket } from "node:net"
import { Effect } from "effect"

/** One connection through the proxy: the client's end and the server's. */
export interface ProxiedConnection {
  readonly client: Socket
  readonly upstream: Socket
}

/** What is done with the bytes of one connection, each way. */
export interface Wire {
  readonly fromClient: (chunk: Buffer) => void
  readonly fromServer: (chunk: Buffer) => void
  /** Whether one end's close is passed on to the other now (a network that went silent does not); always when absent. */
  readonly closes?: () => boolean
}

/** Passes everything on, as if there were no proxy. */
export const passing = ({ client, upstream }: ProxiedConnection): Wire => ({
  fromClient: (chunk) => void upstream.write(chunk),
  fromServer: (chunk) => void client.write(chunk)
})

/** A proxy to `url`'s server, each connection wired by `wire`; its `url` is `url` through it. */
export const tcpProxy = (url: string, wire: (connection: ProxiedConnection) => Wire) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly close: () => void }>((resume) => {
      const target = new URL(url)
      const sockets = new Set<Socket>()
      const server = createServer((client) => {
        const upstream = connectTcp(Number(target.port || 5432), target.hostname)
        sockets.add(client).add(upstream)
        const wired = wire({ client, upstream })
        client.on("data", wired.fromClient)
        upstream.on("data", wired.fromServer)
        const closeOther = (other: Socket) => () => {
          if (wired.closes?.() ?? true) other.destroy()
        }
        for (const [one, other] of [[client, upstream], [upstream, client]] as const) {
          one.on("error", closeOther(other))
          one.on("close", closeOther(other))
        }
      })
      const close = () => {
        for (const socket of sockets) socket.destroy()
        server.close()
      }
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const proxied = new URL(url)
        proxied.hostname = "127.0.0.1"
        proxied.port = String(typeof address === "object" && address !== null ? address.port : 0)
        resume(Effect.succeed({ url: proxied.toString(), close }))
      })
    }),
    (proxy) => Effect.sync(() => proxy.close())
  )
