/**
 * A playbook's own functions run for an event: a throw, or an answer of the wrong kind, is a
 * `PlaybookFailed` that names the playbook's file, the function and what it gave.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { defineAgent } from "../../src/definitions/defineAgent.js"
import { definePlaybook, webhook } from "../../src/definitions/definePlaybook.js"
import { playbookCall } from "../../src/engine/playbookDelivery.js"

const agent = defineAgent({ description: "Takes tickets", model: "demo" })
const route = {
  id: "tickets",
  file: "playbooks/tickets.ts",
  definition: definePlaybook({ on: webhook("tickets", Schema.Struct({ id: Schema.String })), agent, message: (ticket) => ticket.id })
}
const isString = (value: unknown): value is string => typeof value === "string"

describe("a playbook's functions", () => {
  it.effect("a throw, or an answer of the wrong kind, names the file, the function and what it gave", () =>
    Effect.gen(function*() {
      expect(yield* playbookCall(route, "message(event)", () => "hello", isString, "the message's text")).toBe("hello")
      const thrown = yield* Effect.flip(playbookCall(route, "message(event)", () => {
        throw new TypeError("ticket.body is undefined")
      }, isString, "the message's text"))
      expect(thrown).toMatchObject({
        _tag: "PlaybookFailed",
        playbook: "tickets",
        call: "message(event)",
        message: "playbooks/tickets.ts: message(event) threw TypeError: ticket.body is undefined: fix the playbook"
      })
      const wrong = yield* Effect.flip(playbookCall(route, "instance(event)", () => ({ id: 42 }), isString, "an instance id"))
      expect(wrong.message).toBe(`playbooks/tickets.ts: instance(event) gave {"id":42}, not an instance id: fix the playbook`)
    }))
})
