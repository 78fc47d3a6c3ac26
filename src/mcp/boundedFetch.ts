/**
 * What a Streamable HTTP MCP server answers, held to the size the SDK allows one message over stdio
 * (10 MB). The SDK reads an HTTP answer whole however large it is, so a server (or whatever answers
 * at its URL) could grow the process without bound; over stdio the SDK stops at 10 MB. A message
 * over the limit is not read on: the requests it answers get an error saying so in its place, as a
 * server's own JSON-RPC error (the call fails alone, the session goes on).
 */
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js"

/** The most one message may be, in bytes: the SDK's own limit over stdio. */
export const maxMessageBytes = 10 * 1024 * 1024

/** JSON-RPC's code for an internal error: the answer was lost on this side, not refused by the server. */
const internalError = -32603

const tooLarge = `Foundry did not read the server's answer: it was over ${maxMessageBytes} bytes, the most an MCP message may be ` +
  "(a tool result that large: have the tool return less, or write it to a file and return its path)"

const encoder = new TextEncoder()

/** The ids of the requests a POST carries: the ones its answer has to answer. */
const requestIds = (body: RequestInit["body"]): ReadonlyArray<string | number> => {
  if (typeof body !== "string") return []
  try {
    const parsed: unknown = JSON.parse(body)
    return (Array.isArray(parsed) ? parsed : [parsed]).flatMap((message: unknown) =>
      typeof message === "object" && message !== null && "method" in message && "id" in message &&
        (typeof message.id === "string" || typeof message.id === "number")
        ? [message.id]
        : []
    )
  } catch {
    return []
  }
}

const errorFor = (id: string | number) => ({ jsonrpc: "2.0", id, error: { code: internalError, message: tooLarge } })

/**
 * An event stream whose events are each counted: past the limit, the event under way is ended
 * unread (as an event of a type the SDK ignores), and each request gets its error as an event of
 * its own; the stream ends there.
 */
const boundedEvents = (ids: ReadonlyArray<string | number>) => {
  let eventBytes = 0
  let lineEmpty = true
  let afterCr = false
  return new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      for (let i = 0; i < chunk.length; i++) {
        const byte = chunk[i]
        // A line ends at LF, CR or CRLF; an empty line ends the event.
        if (byte === 0x0a && afterCr) {
          afterCr = false
          continue
        }
        afterCr = byte === 0x0d
        if (byte === 0x0a || byte === 0x0d) {
          if (lineEmpty) eventBytes = 0
          lineEmpty = true
        } else {
          lineEmpty = false
          eventBytes++
        }
        if (eventBytes > maxMessageBytes) {
          controller.enqueue(chunk.subarray(0, i))
          const errors = ids.map((id) => `data: ${JSON.stringify(errorFor(id))}\n\n`).join("")
          controller.enqueue(encoder.encode(`\nevent: foundry-unread\n\n${errors}`))
          controller.terminate()
          return
        }
      }
      controller.enqueue(chunk)
    }
  })
}

/** A JSON answer read here, up to the limit: the answer itself, or the requests' errors in its place. */
const boundedJson = async (response: Response, body: ReadableStream<Uint8Array>, ids: ReadonlyArray<string | number>): Promise<Response> => {
  const chunks: Array<Uint8Array> = []
  let bytes = 0
  const reader = body.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    bytes += value.length
    if (bytes > maxMessageBytes) {
      await reader.cancel()
      const errors = ids.map(errorFor)
      return new Response(JSON.stringify(errors.length === 1 ? errors[0] : errors), {
        status: response.status,
        headers: { "content-type": "application/json" }
      })
    }
    chunks.push(value)
  }
  const headers = new Headers(response.headers)
  headers.delete("content-length")
  headers.delete("content-encoding")
  return new Response(new Blob(chunks), { status: response.status, statusText: response.statusText, headers })
}

/** An error page read up to the limit and no further (the SDK reads it whole for its error's message). */
const truncated = () => {
  let bytes = 0
  return new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      const room = maxMessageBytes - bytes
      bytes += chunk.length
      if (chunk.length < room) return controller.enqueue(chunk)
      controller.enqueue(chunk.subarray(0, room))
      controller.terminate()
    }
  })
}

/** `response` with its body read through `transform`. */
const piped = (response: Response, body: ReadableStream<Uint8Array>, transform: TransformStream<Uint8Array, Uint8Array>) =>
  new Response(body.pipeThrough(transform), { status: response.status, statusText: response.statusText, headers: response.headers })

/** `fetch`, with what an MCP server answers held to `maxMessageBytes` a message. */
export const boundedFetch: FetchLike = async (url, init) => {
  const response = await fetch(url, init)
  const body = response.body
  if (body === null) return response
  if (!response.ok) return piped(response, body, truncated())
  const ids = init?.method === "POST" ? requestIds(init.body) : []
  const type = response.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase()
  if (type === "application/json") return boundedJson(response, body, ids)
  if (type !== "text/event-stream") return response
  return piped(response, body, boundedEvents(ids))
}
