/**
 * A run's event stream as an SSE response (`sseResponse`), served by the platform's Node HTTP
 * server and read with `fetch`: frames in order, a reader slower than the writer gets every frame,
 * and a client that goes away closes what the response opened (the log's subscription).
 */
import { Agent, get } from "node:http"
import { HttpRouter, HttpServer } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, type Duration, Effect, Exit, Fiber, Layer, Scope } from "effect"
import type { RunFollower } from "../../src/events/EventLog.js"
import type { FoundryEvent } from "../../src/events/FoundryEvent.js"
import { sseResponse } from "../../src/transports/http/handlers/sse.js"
import * as ServerStopping from "../../src/transports/http/ServerStopping.js"
import { readToEnd } from "../support/eventFeed.js"

/** Event `seq` of run r1: a completed run's end when `last`, else a step. */
const event = (seq: number, last = false): FoundryEvent => ({
  id: `evt-${seq}`,
  seq,
  time: 1_000 + seq,
  traceId: "trace-r1",
  spanId: `span-${seq}`,
  parentSpanId: "span-root",
  runId: "r1",
  conversationId: "c1",
  instanceId: "acme",
  agent: "shop",
  release: "dev",
  ...(last
    ? { type: "run.completed" as const, data: { output: "done", turns: 1 } }
    // A payload of some size, so that a few hundred frames overfill the body's buffer.
    : { type: "run.started" as const, data: { input: `step ${seq} ${"x".repeat(400)}`, model: "demo" } })
})

/** Serves `open`'s events as SSE at `/events` on a free loopback port, idle streams beating every `heartbeat`; its base URL. */
const serve = (open: Effect.Effect<RunFollower, never, Scope.Scope>, heartbeat: Duration.DurationInput = "15 seconds") =>
  Effect.gen(function*() {
    const router = HttpRouter.empty.pipe(HttpRouter.get("/events", sseResponse(open, heartbeat)))
    const context = yield* Layer.build(
      HttpServer.serve(router).pipe(Layer.provideMerge(ServerStopping.nodeServer({ port: 0, host: "127.0.0.1" })), Layer.provideMerge(ServerStopping.layer))
    )
    const address = Context.get(context, HttpServer.HttpServer).address
    return `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`
  })

/**
 * A follower of the events offered to it (at most `max` at a time), ended after the run's end, as
 * the event log's is; `pulled` counts what it handed on.
 */
const followerOf = (max = Number.POSITIVE_INFINITY) => {
  const pending: Array<FoundryEvent> = []
  let waiting: ((events: ReadonlyArray<FoundryEvent> | undefined) => void) | undefined
  let ended = false
  let pulled = 0
  const hand = (deliver: (events: ReadonlyArray<FoundryEvent> | undefined) => void) => {
    const taken = pending.splice(0, max)
    ended = taken.some((e) => e.type === "run.completed")
    pulled += taken.length
    deliver(taken)
  }
  const next: RunFollower = (deliver) => {
    if (ended) deliver(undefined)
    else if (pending.length > 0) hand(deliver)
    else waiting = deliver
    return () => {
      waiting = undefined
    }
  }
  const offer = (events: ReadonlyArray<FoundryEvent>) => {
    pending.push(...events)
    const deliver = waiting
    waiting = undefined
    if (deliver !== undefined) hand(deliver)
  }
  return { next, offer, pulled: () => pulled }
}

/** The `id:` lines of an SSE body, as numbers. */
const ids = (text: string) => text.split("\n").filter((line) => line.startsWith("id: ")).map((line) => Number(line.slice(4)))

describe("a run's events as server-sent events", () => {
  it.scopedLive("every frame arrives in order, also for a reader slower than the writer, and the response ends after the end", () =>
    Effect.gen(function*() {
      const follower = followerOf()
      const count = 600
      const url = yield* serve(Effect.succeed(follower.next))
      // Everything is there before the client reads: far more than the body's buffer holds.
      follower.offer([...Array.from({ length: count - 1 }, (_, i) => event(i + 1)), event(count, true)])
      const text = yield* Effect.promise(async () => {
        const response = await fetch(`${url}/events`)
        return `${response.headers.get("content-type")}\n${await readToEnd(response.body?.getReader(), 1)}`
      })
      expect(text.split("\n", 1)[0]).toBe("text/event-stream")
      expect(ids(text)).toEqual(Array.from({ length: count }, (_, i) => i + 1))
      expect(text.trimEnd().endsWith(`data: ${JSON.stringify(event(count, true))}`)).toBe(true)
    }))

  it.scopedLive("a stream with nothing to say gets a comment every heartbeat, and none while events flow", () =>
    Effect.gen(function*() {
      const follower = followerOf()
      const url = yield* serve(Effect.succeed(follower.next), "200 millis")
      follower.offer([event(1)])
      // Event 1 is written with the response's head: the silence starts after this moment.
      const asked = performance.now()
      const response = yield* Effect.promise(() => fetch(`${url}/events`))
      const reading = yield* Effect.fork(Effect.promise(() => readToEnd(response.body?.getReader(), 0)))
      // A run that waits (for a person, a long tool call): more than two heartbeats' time without an event.
      yield* Effect.sleep("520 millis")
      const resumed = performance.now()
      follower.offer([event(2, true)])
      const text = yield* Fiber.join(reading)
      const comments = text.split("\n").filter((line) => line === ": heartbeat").length
      // One after each 200-250 ms of silence (looked at every 50 ms): the first too, not two
      // heartbeats in. A loaded machine may sleep longer than asked: as many more as that allows.
      expect(comments).toBeGreaterThanOrEqual(2)
      expect(comments).toBeLessThanOrEqual(Math.floor((resumed - asked) / 200))
      expect(ids(text)).toEqual([1, 2])
      expect(text.indexOf(": heartbeat")).toBeGreaterThan(text.indexOf("id: 1"))
      expect(text.lastIndexOf(": heartbeat")).toBeLessThan(text.indexOf("id: 2"))
    }))

  it.scopedLive("a client that goes away closes what the response opened", () =>
    Effect.gen(function*() {
      const follower = followerOf()
      const closed = yield* Deferred.make<void>()
      const open = Effect.as(Effect.addFinalizer(() => Deferred.succeed(closed, undefined)), follower.next)
      const url = yield* serve(open)
      follower.offer([event(1)])
      const first = yield* Effect.promise(async () => {
        const controller = new AbortController()
        const response = await fetch(`${url}/events`, { signal: controller.signal })
        const reader = response.body?.getReader()
        const chunk = await reader?.read()
        controller.abort()
        return new TextDecoder().decode(chunk?.value)
      })
      expect(ids(first)).toEqual([1])
      // The run goes on without the client: nothing is left open for it.
      follower.offer([event(2)])
      yield* Deferred.await(closed).pipe(Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error("the subscription was never closed") }))
      expect(yield* Deferred.isDone(closed)).toBe(true)
    }))

  it.scopedLive("a stream still open when the server stops ends, closes what it opened, and the server stops", () =>
    Effect.gen(function*() {
      const follower = followerOf()
      const closed = yield* Deferred.make<void>()
      const open = Effect.as(Effect.addFinalizer(() => Deferred.succeed(closed, undefined)), follower.next)
      const server = yield* Scope.make()
      const url = yield* serve(open).pipe(Scope.extend(server))
      follower.offer([event(1)])
      // A run that waits on a person: its stream would stay open for hours.
      const body = yield* Effect.promise(async () => (await fetch(`${url}/events`)).body?.getReader())
      const read = yield* Effect.promise(() => readToEnd(body, 0)).pipe(Effect.fork)
      yield* Effect.sleep("100 millis")
      yield* Scope.close(server, Exit.void).pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("the server never stopped") }))
      // Ended, not cut: the client had every frame and the end of the body (it reconnects, to the next server).
      const text = yield* Fiber.join(read).pipe(Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error("the stream never ended") }))
      expect(ids(text)).toEqual([1])
      expect(yield* Deferred.isDone(closed)).toBe(true)
    }))

  it.scopedLive("a client that does not read holds the writer back: no more is pulled than the connection can hold", () =>
    Effect.gen(function*() {
      const follower = followerOf(10)
      const count = 60_000
      const url = yield* serve(Effect.succeed(follower.next))
      follower.offer([...Array.from({ length: count - 1 }, (_, i) => event(i + 1)), event(count, true)])
      const response = yield* Effect.promise(() => fetch(`${url}/events`))
      const reader = response.body?.getReader()
      const first = yield* Effect.promise(async () => new TextDecoder().decode((await reader?.read())?.value))
      expect(ids(first)[0]).toBe(1)
      // About 40 MB of frames wait to be read: what is pulled meanwhile is what the connection's
      // buffers hold (about 4 MB on this machine), far below that.
      yield* Effect.sleep("300 millis")
      const pulledWhileWaiting = follower.pulled()
      expect(pulledWhileWaiting).toBeLessThan(count / 2)
      const rest = yield* Effect.promise(() => readToEnd(reader, 0))
      expect(ids(first + rest)).toEqual(Array.from({ length: count }, (_, i) => i + 1))
      expect(follower.pulled()).toBe(count)
    }))

  it.scopedLive("once the run's end is written, the connection serves the next request (keep-alive)", () =>
    Effect.gen(function*() {
      const url = yield* serve(Effect.sync(() => {
        const follower = followerOf()
        follower.offer([event(1), event(2, true)])
        return follower.next
      }))
      const agent = new Agent({ keepAlive: true, maxSockets: 1 })
      yield* Effect.addFinalizer(() => Effect.sync(() => agent.destroy()))
      // Each stream read to its end on the one connection the agent may open.
      const read = Effect.async<{ readonly body: string; readonly reusedSocket: boolean }, Error>((resume) => {
        const request = get(`${url}/events`, { agent }, (response) => {
          let body = ""
          response.on("data", (chunk: Buffer) => (body += chunk.toString()))
          response.on("end", () => resume(Effect.succeed({ body, reusedSocket: request.reusedSocket })))
        })
        request.on("error", (error) => resume(Effect.fail(error)))
      })
      const first = yield* read
      const second = yield* read.pipe(Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error("the second request was never answered") }))
      expect([ids(first.body), ids(second.body)]).toEqual([[1, 2], [1, 2]])
      expect([first.reusedSocket, second.reusedSocket]).toEqual([false, true])
    }))

  it.scopedLive("a HEAD request, answered without a body, closes what the response opened", () =>
    Effect.gen(function*() {
      const follower = followerOf()
      const opened = yield* Deferred.make<void>()
      const closed = yield* Deferred.make<void>()
      const open = Effect.zipRight(
        Effect.zipRight(Deferred.succeed(opened, undefined), Effect.addFinalizer(() => Deferred.succeed(closed, undefined))),
        Effect.succeed(follower.next)
      )
      const url = yield* serve(open)
      const head = yield* Effect.promise(() => fetch(`${url}/events`, { method: "HEAD" }))
      expect(head.status).toBe(200)
      expect(yield* Deferred.isDone(opened)).toBe(true)
      yield* Deferred.await(closed).pipe(Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error("the subscription was never closed") }))
    }))
})
