/**
 * The edge's second look at a request HttpApi refused: the endpoint it was for, decoded again with
 * every error collected, gives one readable issue per wrong field of its path, body and query.
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpServerRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { requestIssues } from "../../src/transports/http/requestIssues.js"

class Api extends HttpApi.make("test").add(
  HttpApiGroup.make("things")
    .add(
      HttpApiEndpoint.post("make", "/things/:id")
        .setPath(Schema.Struct({ id: Schema.NumberFromString }))
        .setPayload(Schema.Struct({ name: Schema.String, size: Schema.Number }))
        .setUrlParams(Schema.Struct({ dry: Schema.optional(Schema.Literal("yes", "no")) }))
    )
    .add(HttpApiEndpoint.post("special", "/things/special").setPayload(Schema.Struct({ reason: Schema.String })))
) {}

const issuesOf = (path: string, body: unknown) =>
  requestIssues(Api).pipe(
    Effect.provideService(
      HttpServerRequest.HttpServerRequest,
      HttpServerRequest.fromWeb(
        new Request(`http://localhost${path}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body)
        })
      )
    )
  )

describe("the issues of a refused request", () => {
  it.effect("lists every wrong field of the path, the body and the query", () =>
    Effect.gen(function*() {
      expect(yield* issuesOf("/things/abc?dry=maybe", { name: 1 })).toEqual([
        { path: "id", message: `Unable to decode "abc" into a number` },
        { path: "name", message: "expected a string, got 1" },
        { path: "size", message: "is missing" },
        { path: "dry", message: `expected one of "yes", "no", got "maybe"` }
      ])
      expect(yield* issuesOf("/things/7", "hello")).toEqual([{ path: "(body)", message: `expected an object, got "hello"` }])
    }))

  it.effect("a fixed path segment wins over a parameter", () =>
    Effect.gen(function*() {
      expect(yield* issuesOf("/things/special", {})).toEqual([{ path: "reason", message: "is missing" }])
    }))

  it.effect("finds nothing for a request its endpoint accepts, or a path no endpoint has", () =>
    Effect.gen(function*() {
      expect(yield* issuesOf("/things/7?dry=yes", { name: "box", size: 3 })).toEqual([])
      expect(yield* issuesOf("/elsewhere", { name: 1 })).toEqual([])
    }))
})
