/**
 * `POST /api/runs` with `Accept: text/event-stream`: the run submitted and its events streamed in the
 * one request's answer, from its `run.queued` to its end, the same frames its own event stream
 * (`GET /api/runs/:runId/events`) sends. Read with `fetch`, frame by frame, as a client would.
 */
import { randomUUID } from "node:crypto"
import { request as httpRequest } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { durableProject, plan } from "../support/durableProject.js"
import { readToEnd } from "../support/eventFeed.js"
import { plannedModel } from "../support/plannedModel.js"
import { http, runIdOf, startServer } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

/** A frame of an event stream: its id (`undefined` for a comment) and event. */
interface Frame {
  readonly id: number | undefined
  readonly type: string | undefined
  readonly data: { readonly runId?: string; readonly type?: string; readonly seq?: number } | undefined
}

/** The run a `Location` header names. */
const runIdIn = (location: string | null) => decodeURIComponent((location ?? "").slice("/api/runs/".length))

const framesOf = (text: string): ReadonlyArray<Frame> =>
  text.split("\n\n").filter((frame) => frame.length > 0).map((frame) => {
    const field = (name: string) => frame.split("\n").find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2)
    const id = field("id")
    const data = field("data")
    return { id: id === undefined ? undefined : Number(id), type: field("event"), data: data === undefined ? undefined : JSON.parse(data) }
  })

/** Submits `body` asking for the run's events as the answer, and reads them to the answer's end. */
const submitStreamed = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}/api/runs`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream", ...headers },
      body: JSON.stringify(body)
    })
    const text = await readToEnd(response.body?.getReader())
    return { status: response.status, headers: response.headers, text, frames: framesOf(text) }
  })

const setup = Effect.gen(function*() {
  const root = yield* tempProject(durableProject(join(tmpdir(), `foundry-run-stream-${randomUUID()}.log`)))
  return yield* startServer(root, { model: plannedModel })
})

describe("POST /api/runs answered with the run's events", () => {
  it.scopedLive("streams the run from run.queued to run.completed: the frames its own event stream sends, the run named by Location", () =>
    Effect.gen(function*() {
      const { url } = yield* setup
      const streamed = yield* submitStreamed(url, { agent: "worker", message: plan({ calls: [{ name: "record", arguments: { line: "a" } }] }) })
      expect(streamed.status).toBe(200)
      expect(streamed.headers.get("content-type")).toBe("text/event-stream")
      const location = streamed.headers.get("location") ?? ""
      expect(location).toMatch(/^\/api\/runs\/run_/)
      const runId = runIdIn(location)
      const events = streamed.frames.filter((frame) => frame.id !== undefined)
      expect(events[0]?.type).toBe("run.queued")
      expect(events.at(-1)?.type).toBe("run.completed")
      expect(events.every((frame) => frame.data?.runId === runId && frame.data?.type === frame.type && frame.data?.seq === frame.id)).toBe(true)
      // Every event the run stored, once each and in order: what following the run sends.
      const stored = (yield* http(`${url}/api/runs/${runId}/events`)).json as Array<{ seq: number; type: string }>
      expect(events.map((frame) => [frame.id, frame.type])).toEqual(stored.map((event) => [event.seq, event.type]))
      const followed = yield* Effect.promise(async () => {
        const response = await fetch(`${url}${location}/events`, { headers: { accept: "text/event-stream" } })
        return framesOf(await readToEnd(response.body?.getReader())).filter((frame) => frame.id !== undefined)
      })
      expect(followed.map((frame) => frame.id)).toEqual(events.map((frame) => frame.id))
      expect((yield* http(`${url}${location}`)).json).toMatchObject({ id: runId, status: "completed", output: "done: recorded a" })
    }))

  it.scopedLive("a body sent in chunks (no Content-Length, as a streaming client sends it) is answered with the run's events too", () =>
    Effect.gen(function*() {
      const { url } = yield* setup
      const body = JSON.stringify({ agent: "worker", message: plan({ calls: [{ name: "record", arguments: { line: "b" } }] }) })
      const answer = yield* Effect.async<{ readonly status: number; readonly text: string }>((resume) => {
        const request = httpRequest(`${url}/api/runs`, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "text/event-stream", "transfer-encoding": "chunked" }
        }, (response) => {
          let text = ""
          response.setEncoding("utf8")
          response.on("data", (chunk: string) => text += chunk)
          response.on("end", () => resume(Effect.succeed({ status: response.statusCode ?? 0, text })))
        })
        request.on("error", (error) => resume(Effect.die(error)))
        request.write(body.slice(0, 10))
        request.end(body.slice(10))
      })
      expect(answer.status).toBe(200)
      const types = framesOf(answer.text).flatMap((frame) => frame.id === undefined ? [] : [frame.type])
      expect([types[0], types.at(-1)]).toEqual(["run.queued", "run.completed"])
    }))

  it.scopedLive("stays open while the run waits for a person, and goes on to its end once they decide", () =>
    Effect.gen(function*() {
      const { url } = yield* setup
      const answer = yield* Effect.promise(() =>
        fetch(`${url}/api/runs`, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "text/event-stream" },
          body: JSON.stringify({ agent: "worker", message: plan({ calls: [{ name: "transfer", arguments: { amount: 250 } }] }) })
        })
      )
      const reader = answer.body!.getReader()
      const decoder = new TextDecoder()
      let text = ""
      while (!text.includes("event: approval.requested")) {
        const { done, value } = yield* Effect.promise(() => reader.read())
        expect(done).toBe(false)
        text += decoder.decode(value, { stream: true })
      }
      const runId = runIdIn(answer.headers.get("location"))
      const [pending] = (yield* http(`${url}/api/approvals?status=pending&run=${runId}`)).json as Array<{ id: string }>
      expect((yield* http(`${url}/api/approvals/${pending!.id}`, { body: { decision: "approve" } })).status).toBe(200)
      text += yield* Effect.promise(() => readToEnd(reader))
      const types = framesOf(text).flatMap((frame) => frame.id === undefined ? [] : [frame.type])
      expect(types.slice(types.indexOf("approval.requested"))).toEqual(expect.arrayContaining(["approval.decided", "tool.call.completed", "run.completed"]))
      expect(types.at(-1)).toBe("run.completed")
    }))

  it.scopedLive("a repeated Idempotency-Key streams the first run again; a refused submission is the JSON error it always was", () =>
    Effect.gen(function*() {
      const { url } = yield* setup
      const body = { agent: "worker", message: plan({ calls: [{ name: "record", arguments: { line: "once" } }] }) }
      const key = { "idempotency-key": `key-${randomUUID()}` }
      const first = yield* submitStreamed(url, body, key)
      expect(first.frames.at(-1)?.type).toBe("run.completed")
      const again = yield* submitStreamed(url, body, key)
      expect(again.status).toBe(200)
      expect(again.headers.get("location")).toBe(first.headers.get("location"))
      expect(again.frames.filter((frame) => frame.id !== undefined).map((frame) => frame.id)).toEqual(
        first.frames.filter((frame) => frame.id !== undefined).map((frame) => frame.id)
      )
      const runs = (yield* http(`${url}/api/runs?agent=worker`)).json as Array<unknown>
      expect(runs).toHaveLength(1)
      const refused = yield* submitStreamed(url, { agent: "nobody", message: "hi" })
      expect(refused.status).toBe(404)
      expect(refused.headers.get("content-type")).toContain("application/json")
      expect(JSON.parse(refused.text)).toMatchObject({ _tag: "AgentNotFound" })
      const reused = yield* submitStreamed(url, { ...body, message: "something else" }, key)
      expect(reused.status).toBe(422)
      expect(JSON.parse(reused.text)).toMatchObject({ _tag: "IdempotencyKeyReused" })
    }))

  it.scopedLive("the OpenAPI document says so: POST /api/runs answers 202 with the run, or 200 with its events as server-sent events", () =>
    Effect.gen(function*() {
      const { url } = yield* setup
      const document = (yield* http(`${url}/api/openapi.json`)).json as {
        paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, unknown>; headers?: Record<string, unknown> }> }>>
      }
      const responses = document.paths["/api/runs"]?.post?.responses ?? {}
      expect(Object.keys(responses["202"]?.content ?? {})).toEqual(["application/json"])
      expect(Object.keys(responses["200"]?.content ?? {})).toEqual(["text/event-stream"])
      expect(Object.keys(responses["200"]?.headers ?? {})).toEqual(["location"])
    }))

  it.scopedLive("a client that weighs JSON more, or the stream at 0, is answered as without it: the run's JSON, its events as a list", () =>
    Effect.gen(function*() {
      const { url } = yield* setup
      const submit = (accept: string) =>
        Effect.promise(async () => {
          const response = await fetch(`${url}/api/runs`, {
            method: "POST",
            headers: { "content-type": "application/json", accept },
            body: JSON.stringify({ agent: "worker", message: plan({}) })
          })
          await response.body?.cancel()
          return { status: response.status, type: response.headers.get("content-type") }
        })
      for (const accept of ["application/json, text/event-stream;q=0.5", "text/event-stream;q=0", "text/event-stream; q = 0", "Text/Event-Stream; q=0.1, application/json; q=0.9", "text/event-stream;q=0.1, */*"]) {
        const answer = yield* submit(accept)
        expect({ accept, status: answer.status, type: answer.type }).toEqual({ accept, status: 202, type: "application/json" })
      }
      // Weighed more, or as much, the stream is the answer.
      for (const accept of ["text/event-stream;q=0.8, application/json;q=0.2", "application/json, text/event-stream", "text/event-stream, */*"]) {
        const answer = yield* submit(accept)
        expect({ accept, status: answer.status, type: answer.type }).toEqual({ accept, status: 200, type: "text/event-stream" })
      }
      const runId = runIdOf((yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({}) } })).json)
      const followed = yield* Effect.promise(async () => {
        const response = await fetch(`${url}/api/runs/${runId}/events`, { headers: { accept: "application/json;q=1, text/event-stream;q=0.1" } })
        return { type: response.headers.get("content-type"), body: await response.json() }
      })
      expect(followed.type).toBe("application/json")
      expect(Array.isArray(followed.body)).toBe(true)
    }))
})
