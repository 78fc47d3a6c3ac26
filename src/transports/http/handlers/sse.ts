/**
 * Server-sent events on the wire: one frame per event, its `seq` as the id a client resumes from.
 */
import type { FoundryEvent } from "../../../events/FoundryEvent.js"

const encoder = new TextEncoder()

/** One event as an SSE frame; ephemeral events (seq 0) carry no id. */
export const sseFrame = (event: FoundryEvent): Uint8Array =>
  encoder.encode(`${event.seq > 0 ? `id: ${event.seq}\n` : ""}event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`)

/** A comment frame that keeps an idle stream alive. */
export const heartbeatFrame: Uint8Array = encoder.encode(": heartbeat\n\n")
