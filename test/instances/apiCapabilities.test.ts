import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { secretFields } from "../../src/definitions/secretFields.js"
import { configJsonSchema } from "../../src/transports/http/handlers/capabilityView.js"
import { http, startServer } from "../support/server.js"
import { instancesProject } from "./apiProject.js"

describe("GET /api/capabilities", () => {
  it.scopedLive("lists what instances can install, with the JSON Schema of its config and its secret fields", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* instancesProject())
      const response = yield* http(`${server.url}/api/capabilities`)
      expect(response.status).toBe(200)
      expect(response.json).toEqual([{
        kind: "tool",
        id: "crm-notes",
        description: "Reads a customer's notes from the CRM",
        file: expect.stringContaining("tools/crm-notes.tool.ts"),
        config: expect.objectContaining({
          type: "object",
          required: ["baseUrl", "apiKey"],
          properties: { baseUrl: { type: "string" }, apiKey: { type: "string" } }
        }),
        secrets: ["apiKey"]
      }])
    }))
})

describe("a config schema's secret fields", () => {
  it("are the fields declared Schema.Redacted, however deep, optional, refined or annotated", () => {
    const config = Schema.Struct({
      url: Schema.String,
      note: Schema.String.annotations({ description: "Redacted(<redacted>)", identifier: "Redacted" }),
      token: Schema.Redacted(Schema.String).annotations({ description: "the API token" }),
      auth: Schema.Struct({
        user: Schema.String,
        password: Schema.Redacted(Schema.String.pipe(Schema.minLength(8))),
        otp: Schema.optional(Schema.Redacted(Schema.String))
      }),
      retries: Schema.optionalWith(Schema.Number, { default: () => 3 }),
      pin: Schema.optionalWith(Schema.Redacted(Schema.NumberFromString), { exact: true }),
      headers: Schema.Record({ key: Schema.String, value: Schema.Redacted(Schema.String) }),
      keys: Schema.Array(Schema.Struct({ name: Schema.String, value: Schema.Redacted(Schema.String) })),
      either: Schema.Union(Schema.Redacted(Schema.String), Schema.Struct({ vault: Schema.String }))
    })
    expect(secretFields(config)).toEqual(["token", "auth.password", "auth.otp", "pin", "headers.*", "keys.*.value", "either"])
    expect(secretFields(Schema.Struct({ url: Schema.String }))).toEqual([])
  })

  it("a config schema JSON Schema cannot express is shown as {} (anything), not an error", () => {
    expect(configJsonSchema(Schema.Struct({ since: Schema.DateFromSelf }))).toEqual({})
    expect(configJsonSchema(Schema.Struct({ token: Schema.Redacted(Schema.String) }))).toMatchObject({
      properties: { token: { type: "string" } }
    })
  })
})
