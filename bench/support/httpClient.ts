/**
 * A lean HTTP client for load: Node's own `http` module over one keep-alive agent, so the
 * benchmark's clients reuse connections (as real clients do) and spend as little CPU as possible
 * in a process they share with the server they measure.
 */
import { Agent, type ClientRequest, type IncomingMessage, request } from "node:http"
import type { Socket } from "node:net"
import { Effect } from "effect"

/** A keep-alive agent, and every connection its requests have used (to show they were reused). */
export interface LoadClient {
  readonly agent: Agent
  readonly sockets: Set<Socket>
}

/** Connections to one server, kept open between requests; at most `maxSockets` at once. */
export const loadClient = (maxSockets: number) =>
  Effect.acquireRelease(
    Effect.sync((): LoadClient => ({ agent: new Agent({ keepAlive: true, maxSockets }), sockets: new Set() })),
    (client) => Effect.sync(() => client.agent.destroy())
  )

const track = (client: LoadClient, req: ClientRequest) => req.on("socket", (socket) => client.sockets.add(socket))

/** A response's status and its whole body as text. */
export interface TextResponse {
  readonly status: number
  readonly text: string
}

/** `POST url` with a JSON body; the result is the status and the body as text. */
export const postJson = (client: LoadClient, url: string, body: unknown) =>
  Effect.async<TextResponse, Error>((resume) => {
    const payload = Buffer.from(JSON.stringify(body))
    const req = request(url, {
      agent: client.agent,
      method: "POST",
      headers: { "content-type": "application/json", "content-length": payload.length }
    }, (response) => {
      let text = ""
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => (text += chunk))
      response.on("end", () => resume(Effect.succeed({ status: response.statusCode ?? 0, text })))
      response.on("error", (error) => resume(Effect.fail(error)))
    })
    track(client, req).on("error", (error) => resume(Effect.fail(error)))
    req.end(payload)
    return Effect.sync(() => req.destroy())
  })

/** What a followed event stream delivered. */
export interface FollowedStream {
  /** The answer's `Location` header, if it had one (a run submitted with its events as the answer names the run so). */
  readonly location: string | undefined
  /** Frames that carried an `event:` field, in order of arrival. */
  readonly frames: number
  /** The `event:` of the first frame whose type is in `endTypes`, if one came. */
  readonly endType: string | undefined
  /** `performance.now()` when that frame arrived. */
  readonly endedAt: number
}

/**
 * `GET url` with `accept: text/event-stream` (or, with `body`, `POST` it as JSON, asking for the
 * same), read frame by frame until the response ends. Only the `event:` field of each frame is read
 * (no JSON parsing), so following a stream costs the client almost nothing beyond the bytes. The
 * result resolves once the server has ended the response, so the connection is back in the agent's
 * pool before the caller's next request.
 */
export const followEvents = (client: LoadClient, url: string, endTypes: ReadonlySet<string>, body?: unknown) =>
  Effect.async<FollowedStream, Error>((resume) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
    const headers = payload === undefined
      ? { accept: "text/event-stream" }
      : { accept: "text/event-stream", "content-type": "application/json", "content-length": payload.length }
    const method = payload === undefined ? "GET" : "POST"
    const req = request(url, { agent: client.agent, method, headers }, (response: IncomingMessage) => {
      if (response.statusCode !== 200) {
        response.resume()
        return resume(Effect.fail(new Error(`${method} ${url}: status ${response.statusCode}`)))
      }
      const location = response.headers.location
      let buffer = ""
      let frames = 0
      let endType: string | undefined
      let endedAt = 0
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => {
        buffer += chunk
        let boundary = buffer.indexOf("\n\n")
        while (boundary !== -1) {
          const frame = buffer.slice(0, boundary)
          buffer = buffer.slice(boundary + 2)
          boundary = buffer.indexOf("\n\n")
          const line = frame.split("\n").find((l) => l.startsWith("event: "))
          if (line === undefined) continue
          frames++
          const type = line.slice("event: ".length)
          if (endType === undefined && endTypes.has(type)) {
            endType = type
            endedAt = performance.now()
          }
        }
      })
      response.on("end", () => resume(Effect.succeed({ location, frames, endType, endedAt })))
      response.on("error", (error) => resume(Effect.fail(error)))
    })
    track(client, req).on("error", (error) => resume(Effect.fail(error)))
    req.end(payload)
    return Effect.sync(() => req.destroy())
  })
