/**
 * An agent's typed instance context, through a real project served over HTTP: its instructions and
 * its tools read the context decoded by their schemas, and a stored context that a schema no longer
 * accepts is a readable failure that names the field and how to set it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Scripted from "../../src/models/scripted.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { type ProjectFiles, tempProject } from "../support/tempProject.js"

/** The agent, with `fields` more in its context schema. */
const agentFile = (fields = "") =>
  `import { Schema } from "effect"
import { defineAgent } from "foundry"
import plan from "./tools/plan.tool.js"
import tier from "./tools/tier.tool.js"
import whoami from "./tools/whoami.tool.js"

export default defineAgent({
  description: "The help desk",
  // seats is stored as text and read as a number: the instructions add to it.
  context: Schema.Struct({ company: Schema.String, seats: Schema.NumberFromString, plan: Schema.optional(Schema.String)${fields} }),
  instructions: ({ instance }) => \`You help \${instance.context.company} (\${instance.context.seats + 1} seats with you)\`,
  tools: [whoami, plan, tier],
  maxTurns: 4
})
`

const project = (fields = ""): ProjectFiles => ({
  "agents/desk/agent.ts": agentFile(fields),
  "agents/desk/tools/whoami.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Say whom the desk serves",
  input: Schema.Struct({}),
  output: Schema.String,
  context: Schema.Struct({ company: Schema.String, seats: Schema.NumberFromString }),
  run: (_, { instance }) => Effect.succeed("serving " + instance.context.company + " as " + instance.id + ", the next seat is " + (instance.context.seats + 1))
})
`,
  // Asks for a field the agent's schema does not declare: no instance can ever be given it.
  "agents/desk/tools/tier.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Say the customer's tier",
  input: Schema.Struct({}),
  output: Schema.String,
  context: Schema.Struct({ company: Schema.String, tier: Schema.String }),
  run: (_, { instance }) => Effect.succeed(instance.context.tier)
})
`,
  "agents/desk/tools/plan.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Say which plan the customer is on",
  input: Schema.Struct({}),
  output: Schema.String,
  context: Schema.Struct({ company: Schema.String, plan: Schema.Literal("free", "pro") }),
  run: (_, { instance }) => Effect.succeed(instance.context.company + " is on " + instance.context.plan)
})
`
})

interface Script {
  readonly label: string
  readonly calls: ReadonlyArray<string>
}

const isScript = (value: unknown): value is Script => typeof value === "object" && value !== null && "calls" in value

/** A model that calls its message's tools (no arguments), then answers `done: <results>`; `systems` keeps the system prompt it saw, by label. */
const deskModel = () => {
  const systems = new Map<string, string>()
  const model = Scripted.make((request, index) => {
    const users = request.messages.filter((m) => m._tag === "user")
    const last = users[users.length - 1]
    const parsed: unknown = JSON.parse(last?.content ?? "{}")
    const script: Script = isScript(parsed) ? parsed : { label: "", calls: [] }
    systems.set(script.label, request.system)
    if (index === 0 && script.calls.length > 0) return { toolCalls: script.calls.map((name) => ({ name, arguments: {} })), text: "" }
    const results = request.messages.slice(last === undefined ? 0 : request.messages.lastIndexOf(last)).flatMap((m) => m._tag === "tool" ? [m.content] : [])
    return { text: `done: ${results.join(" | ")}` }
  }, "desk")
  return { model, systems }
}

const run = (url: string, label: string, ...calls: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const created = yield* http(`${url}/api/runs`, { body: { agent: "desk", instance: "acme", message: JSON.stringify({ label, calls }) } })
    expect(created.status).toBe(202)
    return yield* waitForRun(url, (created.json as { readonly runId: string }).runId)
  })

const createAcme = (url: string, context: unknown) =>
  Effect.map(http(`${url}/api/instances`, { body: { agent: "desk", id: "acme", context } }), (response) => {
    expect(response.status).toBe(201)
  })

const setContext = (url: string, context: unknown) =>
  Effect.map(http(`${url}/api/instances/acme?agent=desk`, { method: "PATCH", body: { context } }), (response) => {
    expect(response.status).toBe(200)
  })

describe("typed instance context", () => {
  it.scopedLive("the instructions and a tool read the instance's context decoded by their schemas", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project())
      const { model, systems } = deskModel()
      const { url } = yield* startServer(root, { model })
      yield* createAcme(url, { company: "Acme Corp", seats: "12" })

      const done = yield* run(url, "whoami", "whoami")
      expect(systems.get("whoami")).toBe("You help Acme Corp (13 seats with you)")
      expect(done).toMatchObject({ status: "completed", output: "done: serving Acme Corp as acme, the next seat is 13" })
    }))

  it.scopedLive("a tool whose context schema the stored context does not meet fails that call, naming the field and the fix; after a PATCH it runs", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project())
      const { model } = deskModel()
      const { url } = yield* startServer(root, { model })
      yield* createAcme(url, { company: "Acme Corp", seats: "12" })

      const refused = yield* run(url, "plan", "plan", "whoami")
      expect(refused.status).toBe("completed")
      expect(refused.output).toContain(
        `Error: plan cannot run: the context of instance "acme" does not match the tool's context schema (agents/desk/tools/plan.tool.ts):\ncontext.plan: is missing\n` +
          `set it with PATCH /api/instances/acme?agent=desk {"context": {...}}`
      )
      // The other tool of the same turn ran.
      expect(refused.output).toContain("serving Acme Corp as acme")
      // A field the agent's schema does not declare: the fix is in the code, not in a PATCH.
      const undeclared = yield* run(url, "tier", "tier")
      expect(undeclared.output).toContain(
        `context.tier: is missing\nthe agent's context schema (agents/desk/agent.ts) has no field tier, and an instance's context holds only the agent's fields: ` +
          "declare it there, or give the tool the agent's context schema"
      )

      yield* setContext(url, { company: "Acme Corp", seats: "12", plan: "pro" })
      expect(yield* run(url, "plan again", "plan")).toMatchObject({ status: "completed", output: "done: Acme Corp is on pro" })
    }))

  it.scopedLive("a stored context the agent's schema no longer accepts fails the run, naming the field and the fix", () =>
    Effect.gen(function*() {
      const { model } = deskModel()
      // The instance is created under one release of the project...
      const before = yield* tempProject(project())
      const { storeFile } = yield* Effect.scoped(Effect.gen(function*() {
        const served = yield* startServer(before, { model })
        yield* createAcme(served.url, { company: "Acme Corp", seats: "12" })
        return served
      }))
      // ...and run under the next one, whose schema wants a field the stored context lacks.
      const after = yield* tempProject(project(", region: Schema.Literal(\"eu\", \"us\")"))
      const { url } = yield* startServer(after, { model, storeFile })

      const failed = yield* run(url, "stale", "whoami")
      expect(failed.status).toBe("failed")
      expect(failed.error).toBe(
        `the context of instance "acme" does not match the context schema of agent "desk" (agents/desk/agent.ts):\n` +
          `context.region: is missing\nset it with PATCH /api/instances/acme?agent=desk {"context": {...}}`
      )

      yield* setContext(url, { company: "Acme Corp", seats: "12", region: "eu" })
      expect(yield* run(url, "fixed", "whoami")).toMatchObject({ status: "completed", output: "done: serving Acme Corp as acme, the next seat is 13" })
    }))
})
