/**
 * Request bodies over `server.bodyLimit` get 413, and the connection is answered, not reset. The
 * platform's own limit destroys the request stream when it trips, which resets the socket before
 * the client reads any answer; so the edge refuses first: by `content-length` before reading, and
 * a chunked body (no length) by reading it here up to the limit. What is left of a refused body is
 * read and dropped, so the client can finish sending and read the 413.
 */
import type { IncomingMessage } from "node:http"
import { type HttpApp, HttpMethod, HttpServerRequest } from "@effect/platform"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Effect, Option } from "effect"
import { currentNodeResponse } from "../nodeResponse.js"
import { pathOf, refusal } from "./refusal.js"

type Read = { readonly _tag: "Body"; readonly body: Buffer } | { readonly _tag: "TooLarge" } | { readonly _tag: "Aborted" }

/** Reads `incoming` to its end, or until it passes `limit` bytes (then drops the rest as it comes). */
const readUpTo = (incoming: IncomingMessage, limit: number) =>
  Effect.async<Read>((resume) => {
    const parts: Array<Buffer> = []
    let size = 0
    const stop = () => {
      incoming.off("data", onData)
      incoming.off("end", onEnd)
      incoming.off("error", onError)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= limit) return void parts.push(chunk)
      stop()
      // Flowing with no listener: the rest is read and dropped, never left to block the socket.
      incoming.resume()
      resume(Effect.succeed({ _tag: "TooLarge" }))
    }
    const onEnd = () => {
      stop()
      resume(Effect.succeed({ _tag: "Body", body: Buffer.concat(parts) }))
    }
    const onError = () => {
      stop()
      resume(Effect.succeed({ _tag: "Aborted" }))
    }
    incoming.on("data", onData)
    incoming.once("end", onEnd)
    incoming.once("error", onError)
    return Effect.sync(stop)
  })

/** The same request, its body read already. */
const withBody = (request: HttpServerRequest.HttpServerRequest, body: Buffer): HttpServerRequest.HttpServerRequest => {
  const web = new Request(new URL(request.url, "http://request"), { method: request.method, body })
  const replaced = HttpServerRequest.fromWeb(web).modify({ headers: request.headers })
  return request.remoteAddress._tag === "Some" ? replaced.modify({ remoteAddress: request.remoteAddress.value }) : replaced
}

const tooLarge = (limit: number, path: string) =>
  refusal(
    path,
    413,
    "PayloadTooLarge",
    `the request body is larger than ${limit} bytes: send a smaller body, or raise server.bodyLimit in foundry.config.ts`
  )

/** Wraps `app`: bodies over `limit` bytes are answered 413 before `app` sees them. */
export const limitBody = (limit: number) => <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const length = request.headers["content-length"]
    // Node has already refused a content-length that is not a number.
    if (length !== undefined) return Number(length) > limit ? tooLarge(limit, pathOf(request)) : yield* app
    if (!HttpMethod.hasBody(request.method) || request.headers["transfer-encoding"] === undefined) return yield* app
    const read = yield* readUpTo(NodeHttpServerRequest.toIncomingMessage(request), limit)
    switch (read._tag) {
      case "TooLarge":
        return tooLarge(limit, pathOf(request))
      case "Aborted":
        return refusal(pathOf(request), 400, "BadRequest", "the request body could not be read: the client stopped sending it")
      case "Body":
        // The request made of the body has no Node response: a handler that writes its own answer finds the original's.
        return yield* Effect.provideService(app, HttpServerRequest.HttpServerRequest, withBody(request, read.body)).pipe(
          Effect.locally(currentNodeResponse, Option.some(NodeHttpServerRequest.toServerResponse(request)))
        )
    }
  })
