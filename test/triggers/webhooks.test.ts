import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Scripted from "../../src/models/scripted.js"
import { sign, signedPayload } from "../../src/triggers/webhookSignature.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { agentFile, tempProject } from "../support/tempProject.js"
import { bearer, issue } from "../auth/support.js"

const ticketSchema = `const Ticket = Schema.Struct({ id: Schema.String, customerId: Schema.String, priority: Schema.Number, body: Schema.String })`

const project = (config = "") => ({
  "agents/triage/agent.ts": agentFile({ description: "Triage" }),
  "agents/billing/agent.ts": agentFile({ description: "Billing" }),
  "playbooks/urgent.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import triage from "../agents/triage/agent.js"
${ticketSchema}
export default definePlaybook({
  on: webhook("tickets", Ticket),
  when: (ticket) => ticket.priority >= 3,
  agent: triage,
  instance: (ticket) => "customer-" + ticket.customerId,
  message: (ticket) => "Urgent: " + ticket.body
})
`,
  "playbooks/billing.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import billing from "../agents/billing/agent.js"
${ticketSchema}
export default definePlaybook({
  on: webhook("tickets", Ticket),
  when: (ticket) => ticket.body.includes("invoice"),
  agent: billing,
  instance: (ticket) => "customer-" + ticket.customerId,
  message: (ticket) => "Billing question: " + ticket.body
})
`,
  ...(config === "" ? {} : { "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig(${config})\n` })
})

const model = Scripted.make(() => ({ text: "handled" }))

interface Delivery {
  readonly deliveryId: string
  readonly duplicate: boolean
  readonly runs: ReadonlyArray<{ playbook: string; agent: string; instanceId: string; runId: string }>
  readonly skipped: ReadonlyArray<{ playbook: string; reason: string }>
}

const ticket = (overrides: Record<string, unknown> = {}) =>
  JSON.stringify({ id: "t-1", customerId: "42", priority: 4, body: "The site is down", ...overrides })

const deliver = (url: string, body: string, headers: Record<string, string> = {}) =>
  http(`${url}/hooks/tickets`, { body, headers })

describe("webhooks", () => {
  it.scopedLive("a good delivery starts a run of each matching playbook's agent and says what it skipped", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project()), { model })
      const response = yield* deliver(server.url, ticket())
      expect(response.status).toBe(202)
      const delivery = response.json as Delivery
      expect(delivery.runs).toHaveLength(1)
      expect(delivery.runs[0]).toMatchObject({ playbook: "urgent", agent: "triage", instanceId: "customer-42" })
      expect(delivery.skipped).toEqual([{ playbook: "billing", reason: "its when(event) is false" }])
      const run = yield* waitForRun(server.url, delivery.runs[0]!.runId)
      expect(run).toMatchObject({ status: "completed", input: "Urgent: The site is down", instanceId: "customer-42" })
      const types = ((yield* http(`${server.url}/api/events?limit=100`)).json as { events: Array<{ type: string; data: Record<string, unknown> }> })
        .events.filter((e) => e.data.deliveryId === delivery.deliveryId).map((e) => e.type)
      expect(types).toEqual(["delivery.received", "playbook.skipped", "playbook.matched", "instance.provisioned", "playbook.dispatched"])
    }))

  it.scopedLive("a playbook whose schema refuses the body is skipped in the answer and in the delivery's events", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        ...project(),
        "playbooks/orders.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import billing from "../agents/billing/agent.js"
export default definePlaybook({
  on: webhook("tickets", Schema.Struct({ orderId: Schema.String })),
  agent: billing,
  message: (order) => "Order " + order.orderId
})
`
      })
      const server = yield* startServer(root, { model })
      const delivery = (yield* deliver(server.url, ticket())).json as Delivery
      expect(delivery.skipped).toContainEqual({ playbook: "orders", reason: "the body does not match its schema" })
      // A delivery's own events are of no run: `runId=` (empty) reads them, as the playbooks page does.
      const ofNoRun = ((yield* http(`${server.url}/api/events?limit=100&type=playbook.skipped&runId=`)).json as { events: Array<{ runId: string; data: Record<string, unknown> }> }).events
      expect(ofNoRun.every((e) => e.runId === "")).toBe(true)
      const skipped = ofNoRun.filter((e) => e.data.deliveryId === delivery.deliveryId).map((e) => [e.data.playbook, e.data.reason])
      expect(skipped).toContainEqual(["orders", "the body does not match its schema"])
    }))

  it.scopedLive("an instance(event) that is no instance id is skipped with why, and makes no instance", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project()), { model })
      const response = yield* deliver(server.url, ticket({ customerId: "c 9/../x" }))
      expect(response.status).toBe(202)
      const delivery = response.json as Delivery
      expect(delivery.runs).toEqual([])
      const urgent = delivery.skipped.find((s) => s.playbook === "urgent")
      expect(urgent?.reason).toContain(`instance "customer-c 9/../x" is not an instance id`)
      const instances = (yield* http(`${server.url}/api/instances?agent=triage`)).json as { instances: ReadonlyArray<{ id: string }> }
      expect(instances.instances.map((i) => i.id)).not.toContain("customer-c 9/../x")
    }))

  it.scopedLive("one event fans out to two playbooks and two agents", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project()), { model })
      const delivery = (yield* deliver(server.url, ticket({ body: "The site is down and my invoice is wrong" }))).json as Delivery
      expect(delivery.runs.map((r) => r.agent).sort()).toEqual(["billing", "triage"])
      for (const run of delivery.runs) expect((yield* waitForRun(server.url, run.runId)).status).toBe("completed")
    }))

  it.scopedLive("a bad body gets 400 listing every field that failed, and starts nothing", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project()), { model })
      const response = yield* deliver(server.url, JSON.stringify({ id: "t-9", priority: "high" }))
      expect(response.status).toBe(400)
      const { issues, message } = response.json as { issues: Array<{ path: string; message: string }>; message: string }
      expect(issues.map((i) => i.path)).toEqual(expect.arrayContaining(["customerId", "priority", "body"]))
      // The same one line per field as every other 400.
      for (const { message: text, path } of issues) expect(message).toContain(`\n${path}: ${text}`)
      expect(message).toContain(`priority: expected a number, got "high"`)
      expect(message).not.toMatch(/Expected \{|readonly|└─/)
      const notJson = yield* deliver(server.url, "{nope")
      expect(notJson.status).toBe(400)
      expect(notJson.text).toContain("not valid JSON")
      expect((yield* http(`${server.url}/api/runs`)).json).toEqual([])
      expect((yield* http(`${server.url}/hooks/nothing`, { body: "{}" })).status).toBe(404)
    }))

  it.scopedLive("with a secret, a missing or wrong signature gets 401 and a right one is accepted", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project(`{ webhooks: { tickets: { secret: "s3cret" } } }`)), { model })
      const body = ticket()
      const timestamp = Math.floor(Date.now() / 1000)
      const signed = (secret: string, signedBody: string) => ({
        "x-foundry-timestamp": String(timestamp),
        "x-event-id": "evt-1",
        "x-foundry-signature": sign(secret, signedPayload(timestamp, "evt-1", signedBody))
      })
      const missing = yield* deliver(server.url, body)
      expect(missing.status).toBe(401)
      expect(missing.text).toContain("missing x-foundry-signature")
      const wrong = yield* deliver(server.url, body, signed("other", body))
      expect(wrong.status).toBe(401)
      expect(wrong.text).toContain("does not match")
      const tampered = yield* deliver(server.url, ticket({ priority: 5 }), signed("s3cret", body))
      expect(tampered.status).toBe(401)
      const right = yield* deliver(server.url, body, signed("s3cret", body))
      expect(right.status).toBe(202)
      expect((yield* http(`${server.url}/api/runs`)).json).toHaveLength(1)
    }))

  it.scopedLive("on a server that needs tokens, a webhook without a secret takes a delivery only with a token that may start runs", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project(`{ auth: { required: true } }`)), { model })
      // Told how a delivery from beyond this machine is taken, not that this webhook has no secret
      // (the server's log says so): a caller that may not start runs learns nothing of the config.
      const anyone = yield* deliver(server.url, ticket())
      expect(anyone.status).toBe(401)
      expect(anyone.json).toMatchObject({ _tag: "WebhookUnauthorized", message: expect.stringContaining("a Foundry token with scope \"run\"") })
      expect(anyone.text).not.toContain("webhooks.tickets.secret")
      const reader = yield* issue(server.storeFile, "read")
      expect((yield* deliver(server.url, ticket(), bearer(reader.token))).status).toBe(401)
      const runner = yield* issue(server.storeFile, "run")
      const vouched = yield* deliver(server.url, ticket(), bearer(runner.token))
      expect(vouched.status).toBe(202)
      expect((vouched.json as Delivery).runs).toHaveLength(1)
      // Nothing started by the refused ones.
      expect((yield* http(`${server.url}/api/runs`, { headers: bearer(reader.token) })).json).toHaveLength(1)
    }))

  it.scopedLive("a caller not vouched for gets the same 401 from a webhook that exists as from a name none listens on, whatever it sends", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        ...project(`{ auth: { required: true }, webhooks: { tickets: { secret: "s3cret" } } }`),
        // A second webhook, without a secret.
        "playbooks/orders.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import triage from "../agents/triage/agent.js"
${ticketSchema}
export default definePlaybook({ on: webhook("orders", Ticket), agent: triage, message: (ticket) => "Order: " + ticket.body })
`
      })
      const server = yield* startServer(root, { model })
      const body = ticket()
      const now = Math.floor(Date.now() / 1000)
      const guessed = (timestamp: number, eventId: string) => ({
        "x-foundry-timestamp": String(timestamp),
        "x-event-id": eventId,
        "x-foundry-signature": sign("a guess", signedPayload(timestamp, eventId, body))
      })
      const attempts: ReadonlyArray<Record<string, string>> = [
        {},
        // A blank event id was a 400 from a webhook that exists, before its signature was checked.
        { "x-event-id": "" },
        { "x-foundry-signature": sign("a guess", body) },
        guessed(now, "evt-1"),
        // Outside the tolerance: only a sender with the secret is told so (with the webhook's tolerance).
        guessed(now - 60 * 60, "evt-2")
      ]
      for (const headers of attempts) {
        const answers = yield* Effect.forEach(["tickets", "orders", "nothing"], (name) =>
          Effect.map(http(`${server.url}/hooks/${name}`, { body, headers }), (answer) => {
            const { _tag, message } = answer.json as { _tag: string; message: string }
            return { status: answer.status, _tag, message }
          }))
        expect(answers[0]).toMatchObject({ status: 401, _tag: "WebhookUnauthorized" })
        expect(answers[1]).toEqual(answers[0])
        expect(answers[2]).toEqual(answers[0])
      }
      expect((yield* http(`${server.url}/api/runs`, { headers: bearer((yield* issue(server.storeFile, "read")).token) })).json).toEqual([])
      // A sender with a token that may start runs is the owner's: it is told what there is.
      const runner = bearer((yield* issue(server.storeFile, "run")).token)
      const unknown = yield* http(`${server.url}/hooks/nothing`, { body, headers: runner })
      expect(unknown.status).toBe(404)
      expect(unknown.json).toMatchObject({ _tag: "WebhookNotFound", message: "no playbook listens on /hooks/nothing" })
      expect((yield* http(`${server.url}/hooks/orders`, { body, headers: { ...runner, "x-event-id": "" } })).status).toBe(400)
      expect((yield* http(`${server.url}/hooks/orders`, { body, headers: runner })).status).toBe(202)
    }))

  it.scopedLive("a repeated delivery of one event id returns the first runs and starts nothing", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project()), { model })
      const first = yield* deliver(server.url, ticket(), { "x-event-id": "evt-77" })
      const again = yield* deliver(server.url, ticket(), { "x-event-id": "evt-77" })
      expect(first.status).toBe(202)
      expect(again.status).toBe(200)
      expect((again.json as Delivery).duplicate).toBe(true)
      expect((again.json as Delivery).runs).toEqual((first.json as Delivery).runs)
      expect((yield* http(`${server.url}/api/runs`)).json).toHaveLength(1)
    }))

  it.scopedLive("a playbook whose code throws is its own failure: the others' runs start once, the delivery is accepted and names it (not what it threw)", () =>
    Effect.gen(function*() {
      const broken = (name: string, fields: string) => `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import billing from "../agents/billing/agent.js"
${ticketSchema}
export default definePlaybook({
  on: webhook("tickets", Ticket),
  agent: billing,
  instance: "${name}",
  message: () => "seen",
  ${fields}
})
`
      const root = yield* tempProject({
        ...project(),
        "playbooks/zz-when.ts": broken("when", `when: (ticket) => { if (ticket.body.includes("crash")) throw new Error("secret-when"); return true },`),
        "playbooks/zz-event-id.ts": broken("event-id", `eventId: (ticket) => { if (ticket.body.includes("crash")) throw new Error("secret-id"); return ticket.id },`),
        "playbooks/zz-message.ts": broken("message", "").replace(`message: () => "seen"`,
          `message: (ticket) => { if (ticket.body.includes("crash")) throw new Error("secret-message"); return "seen" }`)
      })
      const server = yield* startServer(root, { model })
      // No event id (zz-event-id's threw): a 500 here had the sender send it again, and urgent's run start twice.
      const response = yield* deliver(server.url, ticket({ body: "crash" }))
      expect(response.status).toBe(202)
      const delivery = response.json as Delivery & { failed: ReadonlyArray<{ playbook: string; reason: string }> }
      expect(delivery.runs.map((r) => r.playbook)).toEqual(["urgent"])
      expect(delivery.failed.map((f) => f.playbook)).toEqual(["zz-event-id", "zz-message", "zz-when"])
      expect(delivery.failed.find((f) => f.playbook === "zz-when")?.reason).toContain("its when(event) failed")
      expect(delivery.failed.find((f) => f.playbook === "zz-event-id")?.reason).toContain("its eventId(event) failed")
      expect(response.text).not.toMatch(/secret-|at .*\.js:\d+/)
      expect(((yield* http(`${server.url}/api/runs`)).json as ReadonlyArray<{ agent: string }>).map((r) => r.agent)).toEqual(["triage"])
      // Each failure is its playbook's event, with what its code did, for the owner.
      const failures = ((yield* http(`${server.url}/api/events?type=playbook.failed&runId=`)).json as {
        events: Array<{ agent: string; data: Record<string, unknown> }>
      }).events.filter((e) => e.data.deliveryId === delivery.deliveryId)
      expect(failures.map((e) => [e.data.playbook, e.data.call, e.agent]).sort()).toEqual([
        ["zz-event-id", "eventId(event)", "billing"],
        ["zz-message", "message(event)", "billing"],
        ["zz-when", "when(event)", "billing"]
      ])
      expect(failures.find((e) => e.data.playbook === "zz-message")?.data.error).toContain("playbooks/zz-message.ts: message(event) threw Error: secret-message")

      // Every playbook that takes the event failing, and nothing started (urgent's when is false):
      // the delivery fails whole, naming them, so that the sender's retry reaches them once fixed.
      const whole = yield* deliver(server.url, ticket({ body: "crash", priority: 1 }))
      expect(whole.status).toBe(500)
      expect(whole.json).toMatchObject({ _tag: "WebhookDeliveryFailed", message: expect.stringContaining("send the event again once it is fixed") })
      expect(whole.text).toContain("playbooks zz-event-id, zz-message, zz-when could not take the event")
      expect(whole.text).not.toContain("secret-")
      expect((yield* http(`${server.url}/api/runs`)).json).toHaveLength(1)
    }))

  it.scopedLive("a playbook whose when(event) is false still names the delivery with its eventId(event): a resend starts the others' runs once", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/triage/agent.ts": agentFile({ description: "Triage" }),
        "playbooks/urgent.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import triage from "../agents/triage/agent.js"
${ticketSchema}
export default definePlaybook({
  on: webhook("tickets", Ticket),
  when: (ticket) => ticket.priority >= 3,
  agent: triage,
  message: (ticket) => "Urgent: " + ticket.body,
  eventId: (ticket) => "T-" + ticket.id
})
`,
        "playbooks/every.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import triage from "../agents/triage/agent.js"
${ticketSchema}
export default definePlaybook({
  on: webhook("tickets", Ticket),
  agent: triage,
  message: (ticket) => "Ticket: " + ticket.body
})
`
      })
      const server = yield* startServer(root, { model })
      const first = yield* deliver(server.url, ticket({ priority: 1 }))
      expect(first.json).toMatchObject({ deliveryId: "tickets:T-t-1", runs: [{ playbook: "every" }] })
      const again = yield* deliver(server.url, ticket({ priority: 1 }))
      expect(again.json).toMatchObject({ deliveryId: "tickets:T-t-1" })
      expect((yield* http(`${server.url}/api/runs`)).json).toHaveLength(1)
    }))

  it.scopedLive("an eventId(event) that fails for an event its when(event) declines is no failure of the playbook", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/triage/agent.ts": agentFile({ description: "Triage" }),
        "playbooks/urgent.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import triage from "../agents/triage/agent.js"
${ticketSchema}
const urgentIds = new Map([[3, "u"], [4, "u"], [5, "u"]])
export default definePlaybook({
  on: webhook("tickets", Ticket),
  when: (ticket) => ticket.priority >= 3,
  agent: triage,
  message: (ticket) => "Urgent: " + ticket.body,
  // Written for the events its when takes: any other has no prefix.
  eventId: (ticket) => urgentIds.get(ticket.priority)!.toUpperCase() + "-" + ticket.id
})
`
      })
      const server = yield* startServer(root, { model })
      const low = yield* deliver(server.url, ticket({ priority: 1 }))
      expect(low.status).toBe(202)
      expect(low.json).toMatchObject({ runs: [], skipped: [{ playbook: "urgent", reason: "its when(event) is false" }], failed: [] })
      const high = yield* deliver(server.url, ticket({ priority: 4 }))
      expect(high.json).toMatchObject({ deliveryId: "tickets:U-t-1", runs: [{ playbook: "urgent" }] })
    }))

  it.scopedLive("a when(event) that gives no boolean (a Promise of an async predicate) is the playbook's failure, not a match", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/billing/agent.ts": agentFile({ description: "Billing" }),
        "playbooks/async-when.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import billing from "../agents/billing/agent.js"
${ticketSchema}
export default definePlaybook({
  on: webhook("tickets", Ticket),
  when: (async (ticket: { readonly body: string }) => ticket.body.includes("invoice")) as unknown as (ticket: unknown) => boolean,
  agent: billing,
  message: (ticket) => "Billing question: " + ticket.body
})
`
      })
      const server = yield* startServer(root, { model })
      const failed = yield* deliver(server.url, ticket({ body: "The site is down" }), { "x-event-id": "evt-async" })
      expect(failed.status).toBe(500)
      expect((yield* http(`${server.url}/api/runs`)).json).toEqual([])
    }))

  it.scopedLive("a webhook whose secret cannot be read answers as a missing or wrong signature (a JSON 401), never a 500 or an empty one", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        ...project(),
        "foundry.config.ts": `import { Config } from "effect"
import { defineConfig } from "foundry"
export default defineConfig({ webhooks: { tickets: { secret: Config.redacted("FOUNDRY_TEST_SECRET_NOT_SET") } } })
`
      })
      const server = yield* startServer(root, { model })
      const answer = yield* deliver(server.url, ticket())
      expect(answer.status).toBe(401)
      expect(answer.json).toMatchObject({ _tag: "WebhookUnauthorized", webhook: "tickets", message: expect.stringContaining("missing x-foundry-signature") })
      // Nothing signs with a secret that is not there, whatever it guessed (the log says why: see webhookSecretMissing.test.ts).
      const timestamp = Math.floor(Date.now() / 1000)
      const guessed = yield* deliver(server.url, ticket(), {
        "x-foundry-timestamp": String(timestamp),
        "x-event-id": "evt-1",
        "x-foundry-signature": sign("", signedPayload(timestamp, "evt-1", ticket()))
      })
      expect(guessed.status).toBe(401)
      expect(guessed.json).toMatchObject({ _tag: "WebhookUnauthorized", message: expect.stringContaining("does not match") })
      expect((yield* http(`${server.url}/api/runs`)).json).toHaveLength(0)
    }))

  it.scopedLive("a blank or overlong event id is refused with 400 and starts nothing: it would make every later delivery a repeat", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project()), { model })
      for (const id of ["", "   ", "x".repeat(201)]) {
        const refused = yield* deliver(server.url, ticket(), { "x-event-id": id })
        expect(refused.status).toBe(400)
        expect(refused.json).toMatchObject({ _tag: "WebhookEventIdInvalid", message: expect.stringContaining("x-event-id") })
      }
      expect((yield* http(`${server.url}/api/runs`)).json).toHaveLength(0)
      // Without the header, each delivery is new.
      expect((yield* deliver(server.url, ticket())).status).toBe(202)
      expect((yield* deliver(server.url, ticket())).status).toBe(202)
      expect((yield* http(`${server.url}/api/runs`)).json).toHaveLength(2)
    }))

  it.scopedLive("two concurrent deliveries for a new instance key provision one instance", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project()), { model })
      const both = yield* Effect.all([
        deliver(server.url, ticket({ id: "a" }), { "x-event-id": "a" }),
        deliver(server.url, ticket({ id: "b" }), { "x-event-id": "b" })
      ], { concurrency: 2 })
      const runs = both.flatMap((r) => (r.json as Delivery).runs)
      expect(runs.map((r) => r.instanceId)).toEqual(["customer-42", "customer-42"])
      const provisioned = ((yield* http(`${server.url}/api/events?type=instance.provisioned`)).json as { events: Array<unknown> }).events
      expect(provisioned).toHaveLength(1)
    }))
})

describe("internal events", () => {
  it.scopedLive("a webhook wakes one agent whose tool emits an event that wakes another, as its child", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/classifier/agent.ts": `import { defineAgent } from "foundry"
import classify from "./tools/classify.tool.js"
export default defineAgent({ description: "Classifies tickets", tools: [classify] })
`,
        "agents/classifier/tools/classify.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
export default defineTool({
  description: "Classify a ticket and announce it",
  input: Schema.Struct({ ticketId: Schema.String, text: Schema.String }),
  output: Schema.Struct({ priority: Schema.Number, woke: Schema.Number }),
  run: ({ ticketId, text }, context) => Effect.gen(function*() {
    const priority = text.includes("down") ? 5 : 1
    const { runs } = yield* Effect.orDie(context.emit("ticket-classified", { ticketId, priority }))
    return { priority, woke: runs.length }
  })
})
`,
        "agents/escalation/agent.ts": agentFile({ description: "Escalates" }),
        "playbooks/inbound.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import classifier from "../agents/classifier/agent.js"
export default definePlaybook({
  on: webhook("tickets", Schema.Struct({ id: Schema.String, body: Schema.String })),
  agent: classifier,
  message: (t) => JSON.stringify({ ticketId: t.id, text: t.body })
})
`,
        "playbooks/escalate.ts": `import { Schema } from "effect"
import { definePlaybook, event } from "foundry"
import escalation from "../agents/escalation/agent.js"
export default definePlaybook({
  on: event("ticket-classified", Schema.Struct({ ticketId: Schema.String, priority: Schema.Number })),
  when: (e) => e.priority >= 3,
  agent: escalation,
  instance: (e) => "ticket-" + e.ticketId,
  message: (e) => "Escalate ticket " + e.ticketId
})
`
      })
      // The classifier's model calls its tool with the message as arguments; everyone answers "handled" after.
      const model = Scripted.make((request, index) => {
        const user = request.messages.filter((m) => m._tag === "user").at(-1)
        const content = user?._tag === "user" ? user.content : ""
        return index === 0 && content.startsWith("{")
          ? { toolCalls: [{ name: "classify", arguments: JSON.parse(content) }] }
          : { text: "handled" }
      })
      const server = yield* startServer(root, { model })
      const delivery = (yield* http(`${server.url}/hooks/tickets`, { body: { id: "t-5", body: "site is down" } })).json as Delivery
      const classifierRun = yield* waitForRun(server.url, delivery.runs[0]!.runId)
      expect(classifierRun.status).toBe("completed")
      let escalations: Array<{ id: string; parentRunId?: string; instanceId: string; input: string }> = []
      for (let i = 0; i < 100 && escalations.length === 0; i++) {
        escalations = (yield* http(`${server.url}/api/runs?agent=escalation`)).json as typeof escalations
        if (escalations.length === 0) yield* Effect.sleep("20 millis")
      }
      expect(escalations).toHaveLength(1)
      expect(escalations[0]).toMatchObject({ parentRunId: delivery.runs[0]!.runId, instanceId: "ticket-t-5", input: "Escalate ticket t-5" })
      expect((yield* waitForRun(server.url, escalations[0]!.id)).status).toBe("completed")
      const completed = ((yield* http(`${server.url}/api/events?runId=${classifierRun.id as string}&type=tool.call.completed`)).json as {
        events: Array<{ data: { output: unknown } }>
      }).events
      expect(completed[0]?.data.output).toEqual({ priority: 5, woke: 1 })
    }))
})
