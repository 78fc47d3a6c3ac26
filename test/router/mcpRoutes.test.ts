/**
 * The `mcp` route kind and what makes a capability installable: catalogue MCP servers
 * (`mcp/<path>.ts`), installable shared tools and typed instance contexts, as discovery sees them,
 * refuses them and lists them in the generated files.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { manifestOf, type ManifestRoute, routeTypesOf } from "../../src/router/codegen.js"
import type { ProjectFiles } from "../support/tempProject.js"
import { agentFile, discoverProject, errorFor, onlyErrorFor, routeErrorsOf, toolFile } from "./support.js"

const crmServer = (description = "The customer's CRM") =>
  `import { Redacted, Schema } from "effect"
import { defineMcpServer } from "foundry"

export default defineMcpServer({
  description: ${JSON.stringify(description)},
  installable: { config: Schema.Struct({ url: Schema.String, token: Schema.Redacted(Schema.String) }) },
  connect: (config) => ({ url: config.url, headers: { authorization: \`Bearer \${Redacted.value(config.token)}\` } })
})
`

const notesTool = `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Write a note into the instance's notebook",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  installable: { config: Schema.Struct({ notebook: Schema.String }) },
  context: Schema.Struct({ company: Schema.String }),
  run: ({ text }, { config }) => Effect.succeed(\`\${config.notebook}: \${text}\`)
})
`

const contextAgent = `import { Schema } from "effect"
import { defineAgent } from "foundry"

export default defineAgent({
  description: "Answers for one company",
  context: Schema.Struct({ company: Schema.String }),
  instructions: ({ instance }) => \`You help \${instance.context.company}.\`
})
`

/** A project with every installable kind: two catalogue servers, an installable shared tool, an agent with a context. */
const installsProject: ProjectFiles = {
  "agents/support/agent.ts": contextAgent,
  "agents/plain/agent.ts": agentFile(),
  "tools/notes.tool.ts": notesTool,
  "tools/echo.tool.ts": toolFile(),
  "mcp/crm.ts": crmServer(),
  "mcp/team/tickets.ts": crmServer("The team's ticket tracker"),
  "mcp/_draft.ts": `export default 1\n`,
  "mcp/lib/headers.ts": `export const bearer = (token: string) => \`Bearer \${token}\`\n`
}

const routeOf = (routes: ReadonlyArray<ManifestRoute>, kind: ManifestRoute["kind"], id: string): ManifestRoute => {
  const route = routes.find((r) => r.kind === kind && r.id === id)
  if (route === undefined) return expect.fail(`no ${kind} "${id}" in the manifest`)
  return route
}

describe("discovering installable capabilities", () => {
  it.scoped("mcp/<path>.ts is an MCP server with id <path>; helpers under mcp/ are not routes", () =>
    Effect.gen(function*() {
      const table = yield* discoverProject(installsProject)
      expect(table.mcpServers.map((r) => [r.id, r.file])).toEqual([
        ["crm", "mcp/crm.ts"],
        ["team/tickets", "mcp/team/tickets.ts"]
      ])
      const [crm] = table.mcpServers
      if (crm === undefined) return expect.fail("no MCP server")
      expect(table.idOf(crm.definition)).toBe("crm")
      expect(crm.definition.description).toBe("The customer's CRM")
      const config = Schema.decodeUnknownSync(crm.definition.installable.config)({ url: "https://crm.test/mcp", token: "s3cret" })
      expect(crm.definition.connect(config)).toEqual({ url: "https://crm.test/mcp", headers: { authorization: "Bearer s3cret" } })
    }))

  it.scoped("an installable shared tool keeps its id and its config schema; other tools have none", () =>
    Effect.gen(function*() {
      const table = yield* discoverProject(installsProject)
      const notes = table.tools.find((r) => r.id === "notes") ?? expect.fail("no tool notes")
      expect([notes.file, notes.agent]).toEqual(["tools/notes.tool.ts", undefined])
      const installable = notes.definition.installable ?? expect.fail("notes is not installable")
      expect(Schema.decodeUnknownSync(installable.config)({ notebook: "acme" })).toEqual({ notebook: "acme" })
      expect(notes.definition.context).toBeDefined()
      expect(table.tools.find((r) => r.id === "echo")?.definition.installable).toBeUndefined()
    }))

  it.scoped("an mcp folder with two files of one id is a duplicate", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({ "mcp/crm.ts": crmServer(), "mcp/crm.mjs": crmServer() })
      const error = onlyErrorFor(errors, "mcp/crm.ts")
      expect(error.problem).toBe(`duplicate mcp id "crm": mcp/crm.mjs has the same id`)
      expect(error.fix).toContain("rename or remove one of")
    }))

  it.scoped("an mcp file whose name is not a valid id is refused with a rename", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({ "mcp/MyCrm.ts": crmServer() })
      const error = onlyErrorFor(errors, "mcp/MyCrm.ts")
      expect(error.problem).toContain(`invalid id "MyCrm"`)
      expect(error.fix).toBe(`rename "MyCrm" to "my-crm"`)
    }))
})

describe("broken MCP server files", () => {
  it.scoped("a file under mcp/ that default-exports a tool must be made with defineMcpServer", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({ "mcp/crm.ts": toolFile() })
      const error = onlyErrorFor(errors, "mcp/crm.ts")
      expect(error.problem).toBe("the default export is a tool (defineTool), but a file here must export an MCP server")
      expect(error.fix).toBe("export default defineMcpServer({ ... }), or move the tool to *.tool.ts")
    }))

  it.scoped("a tool file that default-exports an MCP server is told to move it to mcp/", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({ "tools/crm.tool.ts": crmServer() })
      const error = onlyErrorFor(errors, "tools/crm.tool.ts")
      expect(error.problem).toBe("the default export is an MCP server (defineMcpServer), but a file here must export a tool")
      expect(error.fix).toBe("export default defineTool({ ... }), or move the MCP server to mcp/")
    }))

  it.scoped("a server without connect, or whose config is not a Schema, gives one error naming each field", () =>
    Effect.gen(function*() {
      // Plain JavaScript: nothing type-checked it, so the router is the first to see the mistakes.
      const errors = yield* routeErrorsOf({
        "mcp/crm.js": `import { defineMcpServer } from "foundry"

export default defineMcpServer({ description: "", installable: { config: { url: "string" } } })
`
      })
      const error = onlyErrorFor(errors, "mcp/crm.js")
      expect(error.problem).toBe("description is empty; installable.config is not a Schema; connect is not a function")
      expect(error.fix).toContain("add description:")
      expect(error.fix).toContain("use installable: { config: Schema.Struct({")
      expect(error.fix).toContain("add connect: (config) => ({ url: config.url })")
    }))
})

describe("broken installable tools and contexts", () => {
  it.scoped("an installable tool inside an agent's folder is refused: it must be shared", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({
        "agents/support/agent.ts": agentFile(),
        "agents/support/tools/notes.tool.ts": notesTool
      })
      const error = onlyErrorFor(errors, "agents/support/tools/notes.tool.ts")
      expect(error.problem).toContain("installable")
      expect(error.problem).toContain("agent's folder")
      expect(error.fix).toContain("an installable tool must be shared: move it to tools/notes.tool.ts")
    }))

  it.scoped("a tool whose installable is not { config: Schema }, or whose context is not a Schema, is refused", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({
        "tools/notes.tool.js": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Notes",
  input: Schema.String,
  output: Schema.String,
  installable: true,
  context: { company: "string" },
  run: (text) => Effect.succeed(text)
})
`,
        "tools/other.tool.js": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Other",
  input: Schema.String,
  output: Schema.String,
  installable: { schema: Schema.String },
  run: (text) => Effect.succeed(text)
})
`
      })
      expect(errors.errors).toHaveLength(2)
      const notes = errorFor(errors, "tools/notes.tool.js")
      expect(notes.problem).toBe("installable is boolean, not { config: <Schema> }; context is not a Schema")
      expect(notes.fix).toContain("use installable: { config: Schema.Struct(")
      expect(notes.fix).toContain("context: Schema.Struct({ company: Schema.String })")
      expect(errorFor(errors, "tools/other.tool.js").problem).toBe("installable.config is not a Schema")
    }))

  it.scoped("an agent whose context is not a Schema is refused with the fix", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({
        "agents/support/agent.js": `import { defineAgent } from "foundry"

export default defineAgent({ description: "Support", context: { company: "string" } })
`
      })
      const error = onlyErrorFor(errors, "agents/support/agent.js")
      expect(error.problem).toBe("context is not a Schema")
      expect(error.fix).toBe("use an effect/Schema value, e.g. context: Schema.Struct({ company: Schema.String })")
    }))
})

describe("generated files", () => {
  it.scoped("the manifest lists MCP servers and marks installable tools and agents' contexts", () =>
    Effect.gen(function*() {
      const { routes } = manifestOf(yield* discoverProject(installsProject))
      expect(routeOf(routes, "mcp", "crm")).toEqual({
        kind: "mcp",
        id: "crm",
        file: "mcp/crm.ts",
        description: "The customer's CRM",
        installable: true
      })
      expect(routeOf(routes, "mcp", "team/tickets")).toMatchObject({ file: "mcp/team/tickets.ts", installable: true })
      expect(routeOf(routes, "tool", "notes")).toMatchObject({ file: "tools/notes.tool.ts", installable: true })
      expect(routeOf(routes, "tool", "echo").installable).toBeUndefined()
      expect(routeOf(routes, "agent", "support").context).toEqual(
        expect.objectContaining({ type: "object", required: ["company"], properties: { company: { type: "string" } } })
      )
      expect(routeOf(routes, "agent", "plain").context).toBeUndefined()
      expect(JSON.parse(JSON.stringify(routes))).toEqual(routes)
    }))

  it.scoped("routes.d.ts has an McpServers interface keyed by id, typed by each file's default export", () =>
    Effect.gen(function*() {
      const text = routeTypesOf(yield* discoverProject(installsProject))
      const body = /export interface McpServers \{\n([^}]*)\}/.exec(text)?.[1] ?? expect.fail(`no McpServers in:\n${text}`)
      const entries = [...body.matchAll(/^ {2}"([^"]+)": typeof (\w+)$/gm)].map((m) => [m[1], m[2]])
      expect(entries).toEqual([["crm", "mcp_0"], ["team/tickets", "mcp_1"]])
      expect(text).toContain(`/** The MCP servers of this project, by route id. */`)
      expect(text).toContain(`import type mcp_0 from "../mcp/crm.js"`)
      expect(text).toContain(`import type mcp_1 from "../mcp/team/tickets.js"`)
    }))
})
