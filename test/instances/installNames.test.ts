/**
 * The instances API refuses an installation whose name a run of the instance's agent could not
 * offer: two MCP servers of the catalogue mounted under one name (`mcp/sales/crm.ts` and
 * `mcp/support/crm.ts` both as `crm`), or one mounted under the name of the agent's own server.
 * A tool named like one of the agent's own tools likewise. Each refusal names both and the fix;
 * another agent's instance, without that server or tool, installs it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { FoundryEvent } from "../../src/events/FoundryEvent.js"
import * as Scripted from "../../src/models/scripted.js"
import { http, runIdOf, startServer, waitForRun } from "../support/server.js"
import { agentFile, tempProject } from "../support/tempProject.js"

const server = `import { Schema } from "effect"
import { defineMcpServer } from "foundry"

export default defineMcpServer({
  description: "A CRM",
  installable: { config: Schema.Struct({ url: Schema.String }) },
  connect: ({ url }) => ({ url })
})
`

const tool = (installable: string) => `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
export default defineTool({ description: "Look up", input: Schema.Struct({}), output: Schema.String, ${installable} run: () => Effect.succeed("found") })
`

const project = () =>
  tempProject({
    // Its own server "notes" is only declared: nothing here runs it.
    "agents/desk/agent.ts": `import { defineAgent } from "foundry"
import lookup from "./tools/lookup.tool.js"
export default defineAgent({ description: "The help desk", tools: [lookup], mcp: { notes: { command: "notes-server" } } })
`,
    "agents/desk/tools/lookup.tool.ts": tool(""),
    "tools/lookup.tool.ts": tool("installable: { config: Schema.Struct({}) },"),
    "tools/memo.tool.ts": tool(`installable: { config: Schema.Struct({}) }, name: "lookup",`),
    "agents/echo/agent.ts": agentFile(),
    "mcp/sales/crm.ts": server,
    "mcp/support/crm.ts": server,
    "mcp/notes.ts": server
  })

const config = { url: "https://crm.example/mcp" }
const salesCrm = { kind: "mcp", id: "sales/crm", config }
const supportCrm = { kind: "mcp", id: "support/crm", config }

describe("installations a run could not offer under their names", () => {
  it.scopedLive("two MCP servers mounted under one name are refused together, and one beside the other installed already", () =>
    Effect.gen(function*() {
      const { url } = yield* startServer(yield* project())

      const both = yield* http(`${url}/api/instances`, { body: { agent: "desk", id: "acme", installations: [salesCrm, supportCrm] } })
      expect(both.status).toBe(400)
      expect(both.json).toMatchObject({
        _tag: "InvalidInstance",
        issues: [{
          path: "installations[1].id",
          message: `the mcp "support/crm" is mounted as "crm" (the last part of its id), like the mcp "sales/crm" (installations[0].id): ` +
            "a run offers only one of them; keep only one of them installed, or rename one's file"
        }]
      })
      // Refused whole: no instance was made.
      expect((yield* http(`${url}/api/instances/acme?agent=desk`)).status).toBe(404)

      expect((yield* http(`${url}/api/instances`, { body: { agent: "desk", id: "acme", installations: [salesCrm] } })).status).toBe(201)
      const beside = yield* http(`${url}/api/instances/acme/installations?agent=desk`, { body: supportCrm })
      expect(beside.status).toBe(400)
      expect(beside.json).toMatchObject({
        issues: [{
          path: "id",
          message: `the mcp "support/crm" is mounted as "crm" (the last part of its id), like the mcp "sales/crm", which this instance has installed: ` +
            "a run offers only one of them; keep only one of them installed, or rename one's file"
        }]
      })
      // Installed again (a new config) it replaces itself; a change to the whole set may swap one for the other.
      expect((yield* http(`${url}/api/instances/acme/installations?agent=desk`, { body: { ...salesCrm, config: { url: "https://crm2.example/mcp" } } })).status).toBe(201)
      const swapped = yield* http(`${url}/api/instances/acme?agent=desk`, { method: "PATCH", body: { installations: [supportCrm] } })
      expect(swapped.status).toBe(200)
      expect(swapped.json).toMatchObject({ installations: [{ kind: "mcp", id: "support/crm" }] })
      const twice = yield* http(`${url}/api/instances/acme?agent=desk`, { method: "PATCH", body: { installations: [supportCrm, salesCrm] } })
      expect(twice.status).toBe(400)
      expect(twice.json).toMatchObject({ issues: [{ path: "installations[1].id", message: expect.stringContaining(`like the mcp "support/crm" (installations[0].id)`) }] })
    }))

  it.scopedLive("an MCP server mounted under the name of the agent's own server, or a tool named like its own tool, is refused for that agent's instances only", () =>
    Effect.gen(function*() {
      const { url } = yield* startServer(yield* project())
      expect((yield* http(`${url}/api/instances`, { body: { agent: "desk", id: "acme" } })).status).toBe(201)

      const notes = { kind: "mcp", id: "notes", config }
      const refused = yield* http(`${url}/api/instances/acme/installations?agent=desk`, { body: notes })
      expect(refused.status).toBe(400)
      expect(refused.json).toMatchObject({
        _tag: "InvalidInstance",
        issues: [{
          path: "id",
          message: `the mcp "notes" is mounted as "notes" (the last part of its id), like agent "desk"'s own MCP server "notes" (agents/desk/agent.ts), ` +
            "which keeps the name: a run never offers its tools to the model; rename mcp/notes.ts or the agent's server"
        }]
      })
      const created = yield* http(`${url}/api/instances`, { body: { agent: "desk", id: "globex", installations: [notes] } })
      expect(created.status).toBe(400)
      expect((yield* http(`${url}/api/instances/acme?agent=desk`)).json).toMatchObject({ installations: [] })

      // A tool named like one of the agent's own tools is refused likewise.
      const lookup = { kind: "tool", id: "lookup", config: {} }
      const tool = yield* http(`${url}/api/instances/acme/installations?agent=desk`, { body: lookup })
      expect(tool.status).toBe(400)
      expect(tool.json).toMatchObject({
        issues: [{
          path: "id",
          message: `the tool "lookup" is offered as "lookup", like agent "desk"'s own tool "lookup" (agents/desk/tools/lookup.tool.ts), ` +
            `which keeps the name: a run never offers it to the model; give one of them another name (defineTool({ name: "..." }))`
        }]
      })

      // Two installed tools of one name likewise, whichever agent.
      const memo = { kind: "tool", id: "memo", config: {} }
      const twoTools = yield* http(`${url}/api/instances`, { body: { agent: "echo", id: "initech", installations: [lookup, memo] } })
      expect(twoTools.status).toBe(400)
      expect(twoTools.json).toMatchObject({
        issues: [{
          path: "installations[1].id",
          message: `the tool "memo" is offered as "lookup", like the tool "lookup" (installations[0].id): ` +
            `a run offers only one of them; keep only one of them installed, or give one of them another name (defineTool({ name: "..." }))`
        }]
      })

      // The echo agent has no server or tool of those names: its instance installs them.
      expect((yield* http(`${url}/api/instances`, { body: { agent: "echo", id: "acme", installations: [notes, lookup] } })).status).toBe(201)
    }))

  it.scopedLive("installations whose names a later build takes are left out of the instance's runs, each said in an event worded as the API's refusal", () =>
    Effect.gen(function*() {
      const installable = "installable: { config: Schema.Struct({}) },"
      const catalogue = { "tools/lookup.tool.ts": tool(installable), "tools/notes.tool.ts": tool(installable) }
      const offered: Array<ReadonlyArray<string>> = []
      const model = Scripted.make((request) => {
        offered.push(request.tools.map((tool) => tool.name))
        return { text: "done" }
      }, "desk")
      const installations = ["lookup", "notes", "memo"].map((id) => ({ kind: "tool", id, config: {} }))
      const before = yield* tempProject({ ...catalogue, "agents/desk/agent.ts": agentFile(), "tools/memo.tool.ts": tool(installable) })
      const storeFile = yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* startServer(before, { model })
        expect((yield* http(`${server.url}/api/instances`, { body: { agent: "desk", id: "acme", installations } })).status).toBe(201)
        return server.storeFile
      }))

      // The next build, on the same store, gives the agent a tool "lookup" of its own, and names memo "notes".
      const after = yield* tempProject({
        ...catalogue,
        "agents/desk/agent.ts": agentFile({ imports: `import lookup from "./tools/lookup.tool.js"`, tools: ["lookup"] }),
        "agents/desk/tools/lookup.tool.ts": tool(""),
        "tools/memo.tool.ts": tool(`${installable} name: "notes",`)
      })
      const { url } = yield* startServer(after, { model, storeFile })
      const created = yield* http(`${url}/api/runs`, { body: { agent: "desk", instance: "acme", message: "hello" } })
      expect(created.status).toBe(202)
      const runId = runIdOf(created.json)
      expect(yield* waitForRun(url, runId)).toMatchObject({ status: "completed", output: "done" })
      const events = Schema.decodeUnknownSync(Schema.parseJson(Schema.Array(FoundryEvent)))((yield* http(`${url}/api/runs/${runId}/events`)).text)
      expect(events.filter((event) => event.type === "installation.skipped").map((event) => event.data)).toEqual([
        {
          kind: "tool",
          capability: "lookup",
          reason: `the tool "lookup" is offered as "lookup", like agent "desk"'s own tool "lookup" (agents/desk/tools/lookup.tool.ts), ` +
            `which keeps the name: a run never offers it to the model; give one of them another name (defineTool({ name: "..." }))`
        },
        {
          kind: "tool",
          capability: "notes",
          reason: `the tool "notes" is offered as "notes", like the tool "memo", which this instance has installed: ` +
            `a run offers only one of them; keep only one of them installed, or give one of them another name (defineTool({ name: "..." }))`
        }
      ])
      // The agent's own lookup, and memo as "notes" (the first of the two installed, by id).
      expect(offered.at(-1)?.filter((name) => name === "lookup" || name === "notes")).toEqual(["lookup", "notes"])
    }))
})
