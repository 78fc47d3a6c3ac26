/**
 * Playbook targets per instance, through a real server and its webhooks: an instance picked by its
 * provisioning key, created by the playbook when none has the key (once, however many deliveries
 * arrive at once), every instance that has a capability installed, and a paused instance skipped
 * with the reason in the delivery and in the event log (and, for an event a tool emits, without
 * failing the tool). A malformed target is refused when the project loads.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Scripted from "../../src/models/scripted.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { onlyErrorFor, routeErrorsOf } from "../router/support.js"
import { agentFile, tempProject, toolFile } from "../support/tempProject.js"

const project = () =>
  tempProject({
    "agents/desk/agent.ts": `import { Schema } from "effect"
import { defineAgent } from "foundry"
export default defineAgent({
  description: "A help desk, one instance per customer",
  context: Schema.Struct({ company: Schema.NonEmptyString }),
  instructions: ({ instance }) => "You help " + instance.context.company
})
`,
    "tools/crm.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
export default defineTool({
  description: "Reads the customer's CRM",
  input: Schema.Struct({}),
  output: Schema.String,
  installable: {
    config: Schema.Struct({ url: Schema.String.pipe(Schema.startsWith("https://")), token: Schema.Redacted(Schema.String) })
  },
  run: (_input, { config }) => Effect.succeed(config.url)
})
`,
    // Signs a customer up: their instance is made with a context and, when they have one, their CRM.
    "playbooks/signup.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import desk from "../agents/desk/agent.js"
export default definePlaybook({
  on: webhook("signup", Schema.Struct({ customer: Schema.String, company: Schema.String, crm: Schema.optional(Schema.String) })),
  agent: desk,
  instance: {
    key: (e) => e.customer,
    create: (e) => ({
      context: { company: e.company },
      installations: e.crm === undefined ? [] : [{ kind: "tool", id: "crm", config: { url: e.crm, token: "crm-secret-" + e.customer } }]
    })
  },
  message: (e) => "Welcome " + e.company
})
`,
    "playbooks/ticket.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import desk from "../agents/desk/agent.js"
export default definePlaybook({
  on: webhook("ticket", Schema.Struct({ customer: Schema.String, text: Schema.String })),
  agent: desk,
  instance: { key: (e) => e.customer },
  message: (e) => "Ticket: " + e.text
})
`,
    "playbooks/broadcast.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import desk from "../agents/desk/agent.js"
import crm from "../tools/crm.tool.js"
export default definePlaybook({
  on: webhook("broadcast", Schema.Struct({ text: Schema.String })),
  agent: desk,
  instance: { installed: crm },
  message: (e) => "Announcement: " + e.text
})
`,
    // A tool whose emitted event goes to the customer's instance by key.
    "agents/router/agent.ts": `import { defineAgent } from "foundry"
import escalate from "./tools/escalate.tool.js"
export default defineAgent({ description: "Routes escalations", tools: [escalate] })
`,
    "agents/router/tools/escalate.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
export default defineTool({
  description: "Escalate to the customer's desk",
  input: Schema.Struct({ customer: Schema.String }),
  output: Schema.Struct({ woke: Schema.Number }),
  run: ({ customer }, context) => Effect.map(Effect.orDie(context.emit("escalation", { customer })), ({ runs }) => ({ woke: runs.length }))
})
`,
    "playbooks/escalation.ts": `import { Schema } from "effect"
import { definePlaybook, event } from "foundry"
import desk from "../agents/desk/agent.js"
export default definePlaybook({
  on: event("escalation", Schema.Struct({ customer: Schema.String })),
  agent: desk,
  instance: { key: (e) => e.customer },
  message: (e) => "Escalated by " + e.customer
})
`,
    // The old form, for an agent whose instances need a context: nothing to make one from.
    "playbooks/by-id.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import desk from "../agents/desk/agent.js"
export default definePlaybook({
  on: webhook("by-id", Schema.Struct({ customer: Schema.String })),
  agent: desk,
  instance: (e) => "customer-" + e.customer,
  message: () => "Hello"
})
`
  })

// The router's model calls its tool with the message as arguments; every other turn answers "handled".
const model = Scripted.make((request, index) => {
  const user = request.messages.filter((m) => m._tag === "user").at(-1)
  const content = user?._tag === "user" ? user.content : ""
  return index === 0 && content.startsWith("{") ? { toolCalls: [{ name: "escalate", arguments: JSON.parse(content) }] } : { text: "handled" }
})

interface Delivery {
  readonly deliveryId: string
  readonly runs: ReadonlyArray<{ playbook: string; agent: string; instanceId: string; runId: string }>
  readonly skipped: ReadonlyArray<{ playbook: string; reason: string }>
}

interface ListedEvent {
  readonly type: string
  readonly agent: string
  readonly instanceId: string
  readonly data: Record<string, unknown>
}

const isDelivery = (body: unknown): body is Delivery =>
  typeof body === "object" && body !== null && "runs" in body && Array.isArray(body.runs) && "skipped" in body

const deliver = (url: string, hook: string, body: unknown, eventId?: string) =>
  Effect.gen(function*() {
    const response = yield* http(`${url}/hooks/${hook}`, { body, headers: eventId === undefined ? {} : { "x-event-id": eventId } })
    if (response.status !== 202 || !isDelivery(response.json)) {
      return yield* Effect.die(new Error(`POST /hooks/${hook}: ${response.status} ${response.text}`))
    }
    return response.json
  })

const events = (url: string, query: string) =>
  Effect.map(http(`${url}/api/events?limit=1000${query === "" ? "" : `&${query}`}`), (response) => (response.json as { events: Array<ListedEvent> }).events)

const ofDelivery = (all: ReadonlyArray<ListedEvent>, delivery: Delivery) => all.filter((e) => e.data.deliveryId === delivery.deliveryId)

describe("playbook instance targets", () => {
  it.scopedLive("key and create: the first delivery makes the instance with its context and installation, the next one reuses it", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* project(), { model })
      const first = yield* deliver(server.url, "signup", { customer: "acme", company: "Acme", crm: "https://crm.acme.test" })
      expect(first.skipped).toEqual([])
      expect(first.runs).toHaveLength(1)
      const instanceId = first.runs[0]!.instanceId
      expect((yield* waitForRun(server.url, first.runs[0]!.runId)).status).toBe("completed")

      const created = (yield* events(server.url, "type=instance.created")).filter((e) => e.instanceId === instanceId)
      expect(created).toHaveLength(1)
      expect(created[0]).toMatchObject({
        agent: "desk",
        data: { provisioningKey: "acme", context: { company: "Acme" }, installations: [{ kind: "tool", capability: "crm" }], by: "playbook:signup" }
      })
      const installed = (yield* events(server.url, "type=instance.installed")).filter((e) => e.instanceId === instanceId)
      expect(installed.map((e) => e.data)).toEqual([{ kind: "tool", capability: "crm", config: { url: "https://crm.acme.test", token: "<redacted>" } }])
      expect(ofDelivery(yield* events(server.url, "type=instance.provisioned"), first)).toHaveLength(1)

      const second = yield* deliver(server.url, "signup", { customer: "acme", company: "Acme Corp" })
      expect(second.runs.map((r) => r.instanceId)).toEqual([instanceId])
      expect((yield* events(server.url, "type=instance.created")).filter((e) => e.data.provisioningKey === "acme")).toHaveLength(1)
      expect(ofDelivery(yield* events(server.url, "type=instance.provisioned"), second)).toEqual([])
    }))

  it.scopedLive("two concurrent deliveries with one new key create one instance, and both runs go to it", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* project(), { model })
      const both = yield* Effect.all([
        deliver(server.url, "signup", { customer: "globex", company: "Globex" }, "signup-1"),
        deliver(server.url, "signup", { customer: "globex", company: "Globex" }, "signup-2")
      ], { concurrency: 2 })
      const instanceIds = both.flatMap((d) => d.runs.map((r) => r.instanceId))
      expect(instanceIds).toHaveLength(2)
      expect(new Set(instanceIds).size).toBe(1)
      expect((yield* events(server.url, "type=instance.created")).filter((e) => e.data.provisioningKey === "globex")).toHaveLength(1)
      expect((yield* events(server.url, "type=instance.provisioned"))).toHaveLength(1)
    }))

  it.scopedLive("a create with an invalid context or config is skipped with the fields that failed, and makes no instance", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* project(), { model })
      const badContext = yield* deliver(server.url, "signup", { customer: "initech", company: "" })
      const badConfig = yield* deliver(server.url, "signup", { customer: "initech", company: "Initech", crm: "ftp://crm.initech.test" })
      for (const delivery of [badContext, badConfig]) {
        expect(delivery.runs).toEqual([])
        expect(delivery.skipped).toHaveLength(1)
        expect(delivery.skipped[0]!.reason).toContain(`its create(event) gave an invalid instance for key "initech": `)
        const skipped = ofDelivery(yield* events(server.url, "type=playbook.skipped"), delivery)
        expect(skipped.map((e) => `its ${String(e.data.reason)}`)).toEqual([delivery.skipped[0]!.reason])
      }
      expect(badContext.skipped[0]!.reason).toMatch(/context\.company: expected a non empty string/)
      expect(badConfig.skipped[0]!.reason).toMatch(/installations\[0\]\.config\.url: /)
      expect(yield* events(server.url, "type=instance.created")).toEqual([])
      expect(yield* events(server.url, "type=instance.provisioned")).toEqual([])
    }))

  it.scopedLive("key alone: the instance with that key gets the run; an unknown key is skipped, saying how to create it", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* project(), { model })
      const signup = yield* deliver(server.url, "signup", { customer: "acme", company: "Acme" })
      const acme = signup.runs[0]!.instanceId

      const picked = yield* deliver(server.url, "ticket", { customer: "acme", text: "The printer is on fire" })
      expect(picked.skipped).toEqual([])
      expect(picked.runs).toMatchObject([{ playbook: "ticket", agent: "desk", instanceId: acme }])
      expect(yield* waitForRun(server.url, picked.runs[0]!.runId)).toMatchObject({ status: "completed", input: "Ticket: The printer is on fire" })

      const unknown = yield* deliver(server.url, "ticket", { customer: "umbrella", text: "Hello?" })
      expect(unknown.runs).toEqual([])
      expect(unknown.skipped).toHaveLength(1)
      expect(unknown.skipped[0]!.reason).toContain(`instance key "umbrella" matches no instance of agent "desk"`)
      expect(unknown.skipped[0]!.reason).toContain(`POST /api/instances {"agent": "desk", "provisioningKey": "umbrella"}`)
      expect(unknown.skipped[0]!.reason).toContain("create")
      expect(ofDelivery(yield* events(server.url, "type=playbook.skipped"), unknown)).toHaveLength(1)
      // Nothing was made for the unknown key.
      expect((yield* events(server.url, "type=instance.created")).filter((e) => e.data.provisioningKey === "umbrella")).toEqual([])
    }))

  it.scopedLive("installed: one run per instance that has the capability installed, each recorded; none is a skip", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* project(), { model })
      const nobody = yield* deliver(server.url, "broadcast", { text: "Nobody listens" })
      expect(nobody.runs).toEqual([])
      expect(nobody.skipped[0]?.reason).toContain(`installed tool "crm" is on no active instance of agent "desk"`)

      const made = new Map<string, string>()
      for (const [customer, crm] of [["acme", "https://crm.acme.test"], ["globex", undefined], ["initech", "https://crm.initech.test"]] as const) {
        const signup = yield* deliver(server.url, "signup", { customer, company: customer.toUpperCase(), ...(crm === undefined ? {} : { crm }) })
        made.set(customer, signup.runs[0]!.instanceId)
      }
      const broadcast = yield* deliver(server.url, "broadcast", { text: "Maintenance tonight" })
      expect(broadcast.skipped).toEqual([])
      expect(broadcast.runs.map((r) => r.instanceId).sort()).toEqual([made.get("acme"), made.get("initech")].sort())
      for (const run of broadcast.runs) {
        expect(yield* waitForRun(server.url, run.runId)).toMatchObject({ status: "completed", input: "Announcement: Maintenance tonight", instanceId: run.instanceId })
      }
      const recorded = ofDelivery(yield* events(server.url, ""), broadcast)
      for (const type of ["playbook.matched", "playbook.dispatched"]) {
        expect(recorded.filter((e) => e.type === type).map((e) => e.instanceId).sort()).toEqual([made.get("acme"), made.get("initech")].sort())
      }
    }))

  it.scopedLive("a paused target is skipped with its reason in the delivery and in the event log", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* project(), { model })
      const signup = yield* deliver(server.url, "signup", { customer: "acme", company: "Acme" })
      const acme = signup.runs[0]!.instanceId
      const paused = yield* http(`${server.url}/api/instances/${acme}?agent=desk`, { method: "PATCH", body: { paused: true, reason: "invoice unpaid" } })
      expect(paused.status).toBe(200)

      const delivery = yield* deliver(server.url, "ticket", { customer: "acme", text: "Are you there?" })
      expect(delivery.runs).toEqual([])
      expect(delivery.skipped).toHaveLength(1)
      expect(delivery.skipped[0]).toMatchObject({ playbook: "ticket" })
      expect(delivery.skipped[0]!.reason).toContain(`instance "${acme}" of agent "desk" is paused (invoice unpaid)`)
      const recorded = ofDelivery(yield* events(server.url, ""), delivery)
      expect(recorded.map((e) => e.type)).toEqual(["delivery.received", "playbook.matched", "playbook.skipped"])
      expect(recorded[2]).toMatchObject({ instanceId: acme, data: { playbook: "ticket", reason: expect.stringContaining("is paused (invoice unpaid)") } })
      expect(((yield* http(`${server.url}/api/runs?agent=desk`)).json as Array<unknown>)).toHaveLength(1)
    }))

  it.scopedLive("an emitted event for a paused instance is skipped, and the emitting tool goes on", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* project(), { model })
      const acme = (yield* deliver(server.url, "signup", { customer: "acme", company: "Acme" })).runs[0]!.instanceId
      const escalate = Effect.gen(function*() {
        const submitted = yield* http(`${server.url}/api/runs`, { body: { agent: "router", message: JSON.stringify({ customer: "acme" }) } })
        const run = yield* waitForRun(server.url, (submitted.json as { runId: string }).runId)
        expect(run.status).toBe("completed")
        const completed = yield* events(server.url, `runId=${run.id as string}&type=tool.call.completed`)
        return completed[0]?.data.output
      })
      expect(yield* escalate).toEqual({ woke: 1 })
      expect((yield* http(`${server.url}/api/instances/${acme}?agent=desk`, { method: "PATCH", body: { paused: true } })).status).toBe(200)
      expect(yield* escalate).toEqual({ woke: 0 })
      const skipped = (yield* events(server.url, "type=playbook.skipped")).filter((e) => e.data.event === "escalation")
      expect(skipped).toHaveLength(1)
      expect(skipped[0]?.data.reason).toContain(`instance "${acme}" of agent "desk" is paused`)
      // Who emitted it (the envelope: the router's run and instance) and who did not take it (the
      // data: the playbook's agent and the paused instance), as a webhook's skip names its instance.
      const router = ((yield* http(`${server.url}/api/runs?agent=router`)).json as ReadonlyArray<{ instanceId: string }>)[0]
      expect(skipped[0]).toMatchObject({
        agent: "router",
        instanceId: router?.instanceId,
        data: { event: "escalation", playbook: "escalation", agent: "desk", instanceId: acme }
      })
    }))

  it.scopedLive("an id for an agent whose instances need a context is skipped rather than made without one", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* project(), { model })
      const delivery = yield* deliver(server.url, "by-id", { customer: "42" })
      expect(delivery.runs).toEqual([])
      expect(delivery.skipped[0]?.reason).toContain(`instance "customer-42" of agent "desk" does not exist, and its instances need a context`)
      expect((yield* events(server.url, "type=instance.provisioned"))).toEqual([])
    }))
})

describe("a playbook's instance target, checked when the project loads", () => {
  const playbookWith = (instance: string) => ({
    "agents/desk/agent.ts": agentFile(),
    "tools/echo.tool.ts": toolFile(),
    "playbooks/p.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import desk from "../agents/desk/agent.js"
import echo from "../tools/echo.tool.js"
export default definePlaybook({ on: webhook("p", Schema.String), agent: desk, message: () => "m", instance: ${instance} })
`
  })

  it.scoped("installed must be an installable capability, imported", () =>
    Effect.gen(function*() {
      const notInstallable = onlyErrorFor(yield* routeErrorsOf(playbookWith("{ installed: echo as never }")), "playbooks/p.ts")
      expect(notInstallable.problem).toBe("instance.installed is a tool that is not installable")
      expect(notInstallable.fix).toContain("installable: { config")
      const byName = onlyErrorFor(yield* routeErrorsOf(playbookWith(`{ installed: "crm" as never }`)), "playbooks/p.ts")
      expect(byName.problem).toBe(`instance.installed is the string "crm"; capabilities are imported values, not ids`)
      expect(byName.fix).toContain("mcp/<name>.ts")
      const agent = onlyErrorFor(yield* routeErrorsOf(playbookWith("{ installed: desk as never }")), "playbooks/p.ts")
      expect(agent.problem).toBe("instance.installed is an agent, not an installable capability")
    }))

  it.scoped("key must be a function, create a function, and nothing else beside them", () =>
    Effect.gen(function*() {
      const key = onlyErrorFor(yield* routeErrorsOf(playbookWith(`{ key: "acme" as never }`)), "playbooks/p.ts")
      expect(key.problem).toBe("instance.key is not a function")
      expect(key.fix).toContain("key: (event) =>")
      const create = onlyErrorFor(yield* routeErrorsOf(playbookWith(`{ key: () => "acme", create: { context: {} } as never }`)), "playbooks/p.ts")
      expect(create.problem).toBe("instance.create is not a function")
      const other = onlyErrorFor(yield* routeErrorsOf(playbookWith(`{ id: "acme" } as never`)), "playbooks/p.ts")
      expect(other.problem).toBe("instance is an object with id")
      expect(other.fix).toContain("{ key: (event) =>")
    }))
})
