/**
 * The events API as a client sees it: every stored event, page by page, and the frames of an
 * event stream (SSE) as they arrive.
 */
import { Effect } from "effect"
import { http } from "./server.js"

/** An event as the API sends it. */
export interface EventBody {
  readonly seq: number
  readonly type: string
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | null
  readonly runId: string
  readonly data: Record<string, unknown>
}

/** Every stored event (matching `query`, `&`-prefixed), oldest first, paged with `after`. */
export const allEvents = (url: string, query = "") =>
  Effect.gen(function*() {
    const events: Array<EventBody> = []
    let after = 0
    while (true) {
      const page = (yield* http(`${url}/api/events?limit=1000&after=${after}${query}`)).json as {
        events: Array<EventBody>
        nextAfter?: number
      }
      events.push(...page.events)
      if (page.nextAfter === undefined) return events
      after = page.nextAfter
    }
  })

/**
 * The ids and types of the frames an event stream at `path` sends, read until `enough` holds of
 * them or the stream ends; `every`, the types of every frame, those without an id (text deltas) too.
 */
export const readFrames = (
  url: string,
  headers: Record<string, string>,
  enough: (ids: ReadonlyArray<number>, types: ReadonlyArray<string>, every: ReadonlyArray<string>) => boolean,
  query = "",
  path = "/api/events"
) =>
  Effect.promise(async () => {
    const controller = new AbortController()
    const response = await fetch(`${url}${path}${query}`, { headers: { accept: "text/event-stream", ...headers }, signal: controller.signal })
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    const ids: Array<number> = []
    const types: Array<string> = []
    const every: Array<string> = []
    let buffer = ""
    while (!enough(ids, types, every)) {
      const { done, value } = await reader.read()
      if (done) break
      buffer += decoder.decode(value, { stream: true })
      let end = buffer.indexOf("\n\n")
      while (end >= 0) {
        const frame = buffer.slice(0, end).split("\n")
        buffer = buffer.slice(end + 2)
        const id = frame.find((l) => l.startsWith("id: "))
        const type = frame.find((l) => l.startsWith("event: "))
        if (type !== undefined) every.push(type.slice(7))
        if (id !== undefined) {
          ids.push(Number(id.slice(4)))
          types.push(type?.slice(7) ?? "")
        }
        end = buffer.indexOf("\n\n")
      }
    }
    controller.abort()
    return { ids, types, every }
  })

/** The frames of a run's event stream through `url`, to its end: each event with when it came. */
export const runFrames = (url: string, runId: string) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}/api/runs/${runId}/events`, { headers: { accept: "text/event-stream" } })
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    const frames: Array<{ readonly type: string; readonly data: { readonly text?: string; readonly turn?: number }; readonly at: number }> = []
    let buffer = ""
    while (true) {
      const { done, value } = await reader.read()
      if (done) return frames
      buffer += decoder.decode(value, { stream: true })
      for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
        const lines = buffer.slice(0, end).split("\n")
        buffer = buffer.slice(end + 2)
        const type = lines.find((line) => line.startsWith("event: "))?.slice(7)
        const data = lines.find((line) => line.startsWith("data: "))?.slice(6)
        if (type !== undefined) frames.push({ type, data: data === undefined ? {} : JSON.parse(data).data ?? {}, at: Date.now() })
      }
    }
  })

/** What is left of a response body, as text (a body cut instead rejects); with `pauseMs`, a reader that waits that long after each chunk. */
export const readToEnd = async (reader: ReadableStreamDefaultReader<Uint8Array> | undefined, pauseMs = 0) => {
  const decoder = new TextDecoder()
  let body = ""
  while (reader !== undefined) {
    const { done, value } = await reader.read()
    if (done) break
    body += decoder.decode(value, { stream: true })
    if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs))
  }
  return body
}
