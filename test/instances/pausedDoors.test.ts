/**
 * A paused instance through every door that starts runs besides `POST /api/runs`: steering one of
 * its runs, the OpenAI-compatible API (official `openai` client), Foundry's MCP server (the SDK's
 * client) and a tool's `context.spawn`. Each refuses with the reason, and steering leaves the run
 * it was asked to replace as it was.
 */
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import OpenAI from "openai"
import * as Scripted from "../../src/models/scripted.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { agentFile, tempProject } from "../support/tempProject.js"

const project = {
  "agents/desk/agent.ts": `import { defineAgent } from "foundry"
import transfer from "./tools/transfer.tool.js"
import delegate from "./tools/delegate.tool.js"

export default defineAgent({
  description: "The help desk",
  instructions: "Help the customer.",
  tools: [transfer, delegate],
  maxTurns: 4
})
`,
  "agents/desk/tools/transfer.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Transfer money (a person approves every transfer)",
  input: Schema.Struct({ amount: Schema.Number }),
  output: Schema.String,
  approval: "always",
  run: ({ amount }) => Effect.succeed("transferred " + amount)
})
`,
  "agents/desk/tools/delegate.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
import helper from "../../helper/agent.js"

export default defineTool({
  description: "Hand the work to the helper's instance, without waiting",
  input: Schema.Struct({ instance: Schema.String }),
  output: Schema.String,
  run: ({ instance }, context) =>
    Effect.map(context.spawn(helper, "take this over", { instance }), (started) => "spawned " + started.runId)
})
`,
  "agents/helper/agent.ts": agentFile({ description: "Helps the desk" })
}

/** `transfer <n>` and `delegate to <instance>` call those tools first; every answer names the tool results it got. */
const model = Scripted.make((request, index) => {
  const users = request.messages.flatMap((m) => m._tag === "user" ? [m.content] : [])
  const last = users[users.length - 1] ?? ""
  const results = request.messages.flatMap((m) => m._tag === "tool" ? [m.content] : [])
  if (index === 0 && last.startsWith("transfer ")) return { toolCalls: [{ name: "transfer", arguments: { amount: Number(last.slice(9)) } }] }
  if (index === 0 && last.startsWith("delegate to ")) return { toolCalls: [{ name: "delegate", arguments: { instance: last.slice(12) } }] }
  return { text: `done: ${results.join(" | ") || last}` }
})

const serve = Effect.gen(function*() {
  const server = yield* startServer(yield* tempProject(project), { model })
  return server.url
})

/** Makes the instance and pauses it. */
const paused = (url: string, agent: string, id: string, reason: string) =>
  Effect.gen(function*() {
    const made = yield* http(`${url}/api/instances`, { body: { agent, id } })
    expect(made.status).toBe(201)
    const pausing = yield* http(`${url}/api/instances/${id}?agent=${agent}`, { method: "PATCH", body: { paused: true, reason } })
    expect(pausing.json).toMatchObject({ status: "paused", statusReason: reason })
  })

const pausedMessage = (agent: string, id: string, reason: string) =>
  `instance "${id}" of agent "${agent}" is paused (${reason}): it takes no new runs until it is resumed`

const statusOf = (url: string, runId: string) =>
  Effect.map(http(`${url}/api/runs/${runId}`), (response) => (response.json as { readonly status: string }).status)

const waitForStatus = (url: string, runId: string, status: string) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 400; attempt++) {
      if ((yield* statusOf(url, runId)) === status) return
      yield* Effect.sleep("25 millis")
    }
    return yield* Effect.die(new Error(`run ${runId} never became ${status}`))
  })

describe("a paused instance at every door", () => {
  it.scopedLive("steering a run of an instance paused meanwhile is a 409 that leaves the run as it was; once resumed, the steer goes through", () =>
    Effect.gen(function*() {
      const url = yield* serve
      const created = yield* http(`${url}/api/runs`, { body: { agent: "desk", instance: "acme", message: "transfer 40" } })
      expect(created.status).toBe(202)
      const { runId } = created.json as { readonly runId: string }
      yield* waitForStatus(url, runId, "suspended")
      const pausing = yield* http(`${url}/api/instances/acme?agent=desk`, { method: "PATCH", body: { paused: true, reason: "invoice overdue" } })
      expect(pausing.status).toBe(200)

      const steered = yield* http(`${url}/api/runs/${runId}/steer`, { body: { message: "never mind" } })
      expect(steered.status).toBe(409)
      expect(steered.json).toMatchObject({
        _tag: "InstanceUnavailable",
        agent: "desk",
        instance: "acme",
        reason: "paused",
        message: expect.stringContaining(pausedMessage("desk", "acme", "invoice overdue"))
      })
      // Not cancelled, and no successor: still waiting on its approval, alone in its conversation.
      expect(yield* statusOf(url, runId)).toBe("suspended")
      const events = (yield* http(`${url}/api/runs/${runId}/events`)).json as ReadonlyArray<{ readonly type: string }>
      expect(events.map((event) => event.type)).not.toContain("run.cancelled")
      const runs = (yield* http(`${url}/api/runs?agent=desk`)).json as ReadonlyArray<{ readonly id: string }>
      expect(runs.map((run) => run.id)).toEqual([runId])
      const approvals = (yield* http(`${url}/api/approvals?status=pending`)).json as ReadonlyArray<{ readonly runId: string }>
      expect(approvals.map((approval) => approval.runId)).toEqual([runId])

      expect((yield* http(`${url}/api/instances/acme?agent=desk`, { method: "PATCH", body: { paused: false } })).status).toBe(200)
      const resumed = yield* http(`${url}/api/runs/${runId}/steer`, { body: { message: "never mind" } })
      expect(resumed.status).toBe(202)
      const next = resumed.json as { readonly runId: string }
      // The transfer it left open is answered by the cancel, in the successor's transcript.
      expect(yield* waitForRun(url, next.runId)).toMatchObject({ status: "completed", steeredFrom: runId, output: "done: cancelled by steer: never mind" })
      expect(yield* statusOf(url, runId)).toBe("cancelled")
    }))

  it.scopedLive("/v1/chat/completions on agent@instance of a paused instance is a 403 in OpenAI's shape, code instance_paused", () =>
    Effect.gen(function*() {
      const url = yield* serve
      yield* paused(url, "desk", "acme", "invoice overdue")
      const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "not-needed-on-loopback", maxRetries: 0 })
      const refused = yield* Effect.promise(() =>
        client.chat.completions.create({ model: "desk@acme", messages: [{ role: "user", content: "hi" }] }).then(() => undefined, (error: unknown) => error)
      )
      expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError)
      expect(refused).toMatchObject({
        status: 403,
        code: "instance_paused",
        type: "invalid_request_error",
        param: "model",
        message: expect.stringContaining(pausedMessage("desk", "acme", "invoice overdue"))
      })
      const raw = yield* http(`${url}/v1/chat/completions`, { body: { model: "desk@acme", messages: [{ role: "user", content: "hi" }] } })
      expect(raw.status).toBe(403)
      expect(raw.json).toEqual({
        error: { message: expect.stringContaining("is paused (invoice overdue)"), type: "invalid_request_error", param: "model", code: "instance_paused" }
      })
      // Another instance of the agent answers as ever.
      const other = yield* Effect.promise(() =>
        client.chat.completions.create({ model: "desk@globex", messages: [{ role: "user", content: "hi" }] })
      )
      expect(other.choices[0]?.message.content).toBe("done: hi")
    }))

  it.scopedLive("an MCP client calling the agent's tool for a paused instance gets an error result saying it is paused", () =>
    Effect.gen(function*() {
      const url = yield* serve
      yield* paused(url, "desk", "acme", "invoice overdue")
      const client = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const mcp = new Client({ name: "foundry-test", version: "1.0.0" })
          await mcp.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)))
          return mcp
        }),
        (mcp) => Effect.promise(() => mcp.close())
      )
      const call = (instance: string) =>
        Effect.promise(async () =>
          CallToolResultSchema.parse(await client.callTool({ name: "desk", arguments: { message: "hi", instance } }))
        )
      const refused = yield* call("acme")
      expect(refused.isError).toBe(true)
      const text = refused.content.flatMap((block) => block.type === "text" ? [block.text] : []).join("\n")
      expect(text).toContain(pausedMessage("desk", "acme", "invoice overdue"))
      const runs = (yield* http(`${url}/api/runs?agent=desk`)).json as ReadonlyArray<unknown>
      expect(runs).toEqual([])

      const answered = yield* call("globex")
      expect(answered.isError).toBeFalsy()
      expect(answered.structuredContent).toMatchObject({ status: "completed", output: "done: hi", instance: "globex" })
    }))

  it.scopedLive("a tool's context.spawn into a paused instance fails the spawn, and the tool call's result says why", () =>
    Effect.gen(function*() {
      const url = yield* serve
      yield* paused(url, "helper", "acme", "moving house")
      const created = yield* http(`${url}/api/runs`, { body: { agent: "desk", message: "delegate to acme" } })
      expect(created.status).toBe(202)
      const { runId } = created.json as { readonly runId: string }
      const ended = yield* waitForRun(url, runId)
      expect(ended.status).toBe("completed")
      expect(ended.output).toContain("delegate failed")
      expect(ended.output).toContain("spawn: " + pausedMessage("helper", "acme", "moving house"))
      const events = (yield* http(`${url}/api/runs/${runId}/events`)).json as ReadonlyArray<{ readonly type: string; readonly data: unknown }>
      const failed = events.find((event) => event.type === "tool.call.failed")
      expect(JSON.stringify(failed?.data)).toContain("is paused (moving house)")
      expect((yield* http(`${url}/api/runs?agent=helper`)).json).toEqual([])

      // Into an instance that takes runs, the spawn starts one.
      const spawning = yield* http(`${url}/api/runs`, { body: { agent: "desk", message: "delegate to globex" } })
      const spawned = yield* waitForRun(url, (spawning.json as { readonly runId: string }).runId)
      expect(spawned.output).toMatch(/^done: spawned run_/)
    }))
})
