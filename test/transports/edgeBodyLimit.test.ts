/**
 * Bodies over `server.bodyLimit` are answered 413 with a JSON error, and the connection is
 * answered, not reset: with a content-length, chunked without one, and through `fetch`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { http, startServer } from "../support/server.js"
import { agentFile, tempProject } from "../support/tempProject.js"
import { rawRequest } from "./edgeClient.js"

const limit = 64 * 1024
const project = {
  "agents/echo/agent.ts": agentFile(),
  "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ server: { bodyLimit: ${limit} } })\n`
}
const json = { "content-type": "application/json" }
const oversized = JSON.stringify({ agent: "echo", message: "x".repeat(4 * limit) })

const expectTooLarge = (answer: { readonly _tag: string } & Record<string, unknown>) => {
  expect(answer).toMatchObject({ _tag: "response", status: 413 })
  expect(answer.json).toEqual({ _tag: "PayloadTooLarge", message: expect.stringContaining(`larger than ${limit} bytes`) })
  expect(String((answer.json as { message: string }).message)).toContain("server.bodyLimit")
}

describe("request bodies over server.bodyLimit", () => {
  it.scopedLive("a body with a content-length over the limit gets 413, not a reset", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project))
      expectTooLarge(yield* rawRequest(server.url, { method: "POST", path: "/api/runs", headers: json, body: oversized }))
      // Far over the limit, on a route whose handler reads the raw body.
      expectTooLarge(yield* rawRequest(server.url, { method: "POST", path: "/hooks/any", headers: json, body: "x".repeat(40 * limit) }))
      expect((yield* http(`${server.url}/api/runs`)).json).toEqual([])
    }))

  it.scopedLive("a chunked body without a content-length gets 413 once it passes the limit, not a reset", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project))
      const chunks = Array.from({ length: 64 }, () => "x".repeat(16 * 1024))
      expectTooLarge(yield* rawRequest(server.url, { method: "POST", path: "/api/runs", headers: json, chunks }))
      expect((yield* http(`${server.url}/api/runs`)).json).toEqual([])
    }))

  it.scopedLive("a chunked body within the limit is read as the body", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project))
      const body = JSON.stringify({ agent: "echo", message: "hello in chunks" })
      const answer = yield* rawRequest(server.url, {
        method: "POST",
        path: "/api/runs",
        headers: json,
        chunks: [body.slice(0, 10), body.slice(10, 20), body.slice(20)]
      })
      expect(answer).toMatchObject({ _tag: "response", status: 202 })
      const bad = yield* rawRequest(server.url, { method: "POST", path: "/api/runs", headers: json, chunks: ["{\"agent\":", "\"echo\"}"] })
      expect(bad).toMatchObject({ _tag: "response", status: 400 })
      expect(bad._tag === "response" ? bad.text : "").toContain("message")
    }))

  it.scopedLive("fetch gets the 413 and its JSON error", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project))
      const response = yield* http(`${server.url}/api/runs`, { body: oversized })
      expect(response.status).toBe(413)
      expect(response.json).toMatchObject({ _tag: "PayloadTooLarge" })
      // The server keeps answering.
      expect((yield* http(`${server.url}/api/runs`)).status).toBe(200)
    }))
})

describe("bodies and paths no route reads", () => {
  it.scopedLive("a body that is not JSON gets 415 (a form, as `curl -d` sends, and text too), and a multipart body, answered at once", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project))
      for (
        const contentType of [
          "application/xml",
          "application/octet-stream",
          "multipart/form-data",
          "multipart/form-data; boundary=x",
          "application/x-www-form-urlencoded",
          "text/plain"
        ]
      ) {
        const answer = yield* rawRequest(server.url, { method: "POST", path: "/api/runs", headers: { "content-type": contentType }, body: "<run agent='echo'/>" })
        expect([contentType, answer._tag === "response" ? answer.status : answer.code]).toEqual([contentType, 415])
        expect(answer._tag === "response" ? answer.json : undefined).toEqual({
          _tag: "UnsupportedMediaType",
          message: expect.stringContaining("content-type: application/json")
        })
      }
      // A form that reads as a whole request (what another site's page can post) is refused as well, not run.
      for (
        const [path, body] of [
          ["/api/runs", "agent=echo&message=hi"],
          ["/api/instances", "agent=echo"],
          ["/v1/chat/completions", "model=echo&messages=hi"]
        ] as const
      ) {
        const form = yield* rawRequest(server.url, { method: "POST", path, headers: { "content-type": "application/x-www-form-urlencoded" }, body })
        expect([path, form._tag === "response" ? form.status : form.code]).toEqual([path, 415])
      }
      expect((yield* http(`${server.url}/api/runs`)).json).toEqual([])
      expect((yield* http(`${server.url}/api/instances`)).json).toMatchObject({ instances: [] })
    }))

  it.scopedLive("a field the body does not have (a misspelt one) is refused, named, and nothing starts", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project))
      const answer = yield* http(`${server.url}/api/runs`, { body: { agent: "echo", message: "hi", instanceId: "acme" } })
      expect(answer.status).toBe(400)
      expect(answer.json).toMatchObject({
        _tag: "BadRequest",
        // As the reply to a submission names it: the field it takes is `instance`.
        message: expect.stringMatching(/^instanceId: is not allowed; did you mean "instance"\? \(the fields here: agent, message, .*\binstance\b.*\)$/)
      })
      expect((yield* http(`${server.url}/api/runs`)).json).toEqual([])
    }))

  it.scopedLive("a body nested thousands of levels deep (a few KB) is refused as the field that is wrong, not a 500", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project))
      const deep = `{"agent":"echo","message":${"[".repeat(3000)}${"]".repeat(3000)}}`
      const answer = yield* http(`${server.url}/api/runs`, { body: deep })
      expect(answer.status).toBe(400)
      expect(answer.json).toMatchObject({ _tag: "BadRequest", message: "message: expected a string, got an array" })
      expect((yield* http(`${server.url}/api/runs`)).json).toEqual([])
    }))

  it.scopedLive("a path with an empty segment is not a route", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project))
      for (const method of ["GET", "POST"]) {
        const answer = yield* rawRequest(server.url, { method, path: "/api//runs", headers: json, body: "{}" })
        expect(answer).toMatchObject({ _tag: "response", status: 404, json: { _tag: "NotFound" } })
      }
    }))
})
