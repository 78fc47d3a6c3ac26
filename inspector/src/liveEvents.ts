/**
 * The live event stream every page of the inspector follows: one SSE connection shared by the
 * pages' listeners, resumed after the last event handed on, carrying the text deltas of the one
 * conversation whose page is open.
 */
import { api, type FoundryEvent } from "./api.js"

type Listener = (event: FoundryEvent) => void

/** The conversation whose replies' text deltas the stream carries (its page is open), if any. */
let deltasOf: string | undefined

const listeners = new Set<Listener>()
const openedListeners = new Set<() => void>()
// The stream events come from; one it replaced that was open stays open until it is, and what
// both carry is handed on once.
let source: EventSource | undefined
let retiring: Array<EventSource> = []
// From a refused stream until its next try (after a sign-in, maybe): one asked for meanwhile waits for it.
let reopening = false
// Whether a switch to the stream `deltasOf` asks for is due: a page left and the next one opened
// in one go switch once.
let switching = false
// Refused streams in a row: each waits twice as long before the next try (a 429 would otherwise
// be answered by a stream a second, and the rate limit never left).
let refusals = 0
// The numbers of the events handed on lately, while two streams may both carry them, and the
// highest: a stream that replaces another starts after it, so that nothing falls between them.
const handedOn = new Set<number>()
let handedOnUpTo = 0

// The newest event stored when the inspector loaded, read before any page drew: until an event is
// handed on, a stream starts after it. Without a cursor a stream starts when the server opens
// it, and an event stored between a page's first read and then came in neither (a run's page
// stayed on "running").
let loadedAfter: number | undefined

/** The stream of every event (text deltas only of the conversation whose page is open), from after the last event handed on. */
const streamPath = () => {
  const deltas = deltasOf === undefined ? "deltas=false" : `deltasOf=${encodeURIComponent(deltasOf)}`
  const after = handedOnUpTo > 0 ? handedOnUpTo : loadedAfter
  return `/api/events?${deltas}${after === undefined ? "" : `&after=${after}`}`
}

/**
 * Reads where the live stream will start: after the newest event stored now. Called before any
 * page draws, so that what a page reads and what the stream brings leave nothing between them
 * (a store that cannot say leaves the stream to start when it opens, as before).
 */
export const streamFromNow = (): Promise<void> =>
  api.events(new URLSearchParams({ order: "newest", limit: "1" })).then((page) => {
    loadedAfter = page.events[0]?.seq ?? 0
  }, () => undefined)

const dispatchFrom = (stream: EventSource) => (message: MessageEvent<string>) => {
  const event: FoundryEvent = JSON.parse(message.data)
  if (event.seq === 0) {
    // A text delta: only the newest stream asks for the right conversation's.
    if (stream !== source) return
  } else {
    if (handedOn.has(event.seq)) return
    handedOn.add(event.seq)
    handedOnUpTo = Math.max(handedOnUpTo, event.seq)
    if (handedOn.size > 2000) handedOn.delete(handedOn.values().next().value ?? 0)
  }
  for (const l of listeners) l(event)
}

/**
 * Loads the inspector again when the server no longer holds the store whose events it handed on
 * up to `upTo`: a store whose newest event is numbered lower started over (a fresh dev database,
 * another project's server on the port). A stream resumed after those numbers would bring nothing
 * until the new store passed them, and every page drawn from the old one is stale.
 */
const reloadIfStartedOver = (upTo: number): void => {
  void api.events(new URLSearchParams({ order: "newest", limit: "1" })).then((page) => {
    if ((page.events[0]?.seq ?? 0) < upTo) location.reload()
  }, () => undefined)
}

/**
 * Opens the stream of every event (EventSource resumes after a drop with Last-Event-ID). One it
 * replaces that is open gives way once this one is; one still connecting has carried nothing and
 * goes at once.
 */
const openStream = (): void => {
  const resumed = handedOnUpTo > 0 && source?.readyState !== EventSource.OPEN
  reopening = false
  switching = false
  if (source?.readyState === EventSource.OPEN) retiring.push(source)
  else source?.close()
  const stream = new EventSource(streamPath())
  source = stream
  let opens = 0
  const indicator = document.getElementById("live")
  stream.onopen = () => {
    if (stream !== source) return
    refusals = 0
    indicator?.classList.add("on")
    for (const old of retiring) old.close()
    retiring = []
    for (const opened of openedListeners) opened()
    // Opened again after a drop (EventSource's own retry, or a new stream after a refusal): the
    // server may be another since. A switch from an open stream is to the same server.
    opens += 1
    if (opens > 1 || resumed) reloadIfStartedOver(handedOnUpTo)
  }
  stream.onerror = () => {
    if (stream !== source) return
    indicator?.classList.remove("on")
    // EventSource retries a dropped connection itself, but gives up on an error status such as
    // 401: sign in if that is why (the session call asks), then open a new stream.
    if (stream.readyState !== EventSource.CLOSED) return
    source = undefined
    reopening = true
    const wait = Math.min(1000 * 2 ** refusals, 30_000)
    refusals += 1
    const reopen = () => {
      setTimeout(() => {
        if (reopening) openStream()
      }, wait)
    }
    void api.session().then(reopen, reopen)
  }
  const dispatch = dispatchFrom(stream)
  stream.onmessage = dispatch
  for (const type of Object.keys(liveTypes)) stream.addEventListener(type, dispatch)
}

/** Switches the stream to what `deltasOf` asks for, once, after the work of this moment (a page left, the next one opened). */
const switchSoon = (): void => {
  if (switching || source === undefined) return
  switching = true
  queueMicrotask(() => {
    if (switching && source !== undefined) openStream()
  })
}

/**
 * Listens to every event as it happens, over one shared SSE connection (a browser keeps six to a
 * server, across its tabs). Text deltas come only of the conversation `streamDeltasOf` names.
 * Returns the function that stops listening.
 */
export const onEvent = (listener: Listener): (() => void) => {
  listeners.add(listener)
  if (source === undefined && !reopening) openStream()
  return () => listeners.delete(listener)
}

/**
 * Has the stream carry the text deltas of conversation `conversationId`'s replies while its page
 * is open (a stream that carries none has no server make or send them), and calls `opened` each
 * time the stream opens: a stream opened before any event came starts from that moment, and what
 * happened before it is the page's to read. Returns the function that stops them.
 */
export const streamDeltasOf = (conversationId: string, opened: () => void): (() => void) => {
  deltasOf = conversationId
  openedListeners.add(opened)
  switchSoon()
  return () => {
    openedListeners.delete(opened)
    if (deltasOf !== conversationId) return
    deltasOf = undefined
    switchSoon()
  }
}

/**
 * Every event type, keyed by `FoundryEvent["type"]` so that tsc fails when FoundryEvent gains a
 * type this object lacks. The stream names each event (`event: run.started`) and EventSource hands
 * a named event only to a listener for that name: a type missing here would never reach a page.
 * The types are written out rather than imported as values, because `EventType.literals` would
 * bring `effect`'s Schema (about 300 KB) into a script of 25 KB.
 */
const liveTypes: { readonly [Type in FoundryEvent["type"]]: true } = {
  "run.queued": true,
  "run.started": true,
  "run.completed": true,
  "run.failed": true,
  "run.cancelled": true,
  "run.suspended": true,
  "run.resumed": true,
  "approval.requested": true,
  "approval.decided": true,
  "model.turn.started": true,
  "model.retry": true,
  "model.fallback": true,
  "model.turn.completed": true,
  "model.delta": true,
  "tool.call.started": true,
  "tool.call.completed": true,
  "tool.call.failed": true,
  "delivery.received": true,
  "playbook.matched": true,
  "playbook.skipped": true,
  "playbook.failed": true,
  "instance.provisioned": true,
  "instance.created": true,
  "instance.updated": true,
  "instance.paused": true,
  "instance.resumed": true,
  "instance.archived": true,
  "instance.installed": true,
  "instance.uninstalled": true,
  "installation.skipped": true,
  "playbook.dispatched": true,
  "timer.armed": true,
  "context.compacting": true,
  "context.compacted": true,
  "context.uncompacted": true,
  "context.summary.completed": true,
  "budget.exceeded": true
}
