/**
 * Generated files: the manifest (every route as data) and the route types (`.foundry/routes.d.ts`),
 * written into the project by `writeGenerated`.
 */
import { existsSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import {
  type Manifest,
  manifestOf,
  type ManifestRoute,
  requirementsCheck,
  routeTypesOf,
  writeGenerated
} from "../../src/router/codegen.js"
import { tempProject, writeFiles } from "../support/tempProject.js"
import { agentFile, discoverAt, discoverProject, goodProject, toolFile } from "./support.js"

const routeOf = (manifest: Manifest, kind: ManifestRoute["kind"], id: string): ManifestRoute => {
  const route = manifest.routes.find((r) => r.kind === kind && r.id === id)
  if (route === undefined) return expect.fail(`no ${kind} "${id}" in the manifest`)
  return route
}

const isManifest = (value: unknown): value is Manifest =>
  typeof value === "object" && value !== null && "generatedBy" in value && value.generatedBy === "foundry" &&
  "routes" in value && Array.isArray(value.routes)

describe("manifestOf", () => {
  it.scoped("lists every route with its kind, id and file", () =>
    Effect.gen(function*() {
      const manifest = manifestOf(yield* discoverProject(goodProject))
      expect(manifest.generatedBy).toBe("foundry")
      expect(manifest.config).toBe("foundry.config.ts")
      expect(manifest.routes.map((r) => [r.kind, r.id, r.file]).sort()).toEqual([
        ["agent", "support", "agents/support/agent.ts"],
        ["agent", "support/triage", "agents/support/triage/agent.ts"],
        ["environment", "workspace", "environments/workspace.ts"],
        ["playbook", "urgent-ticket", "playbooks/urgent-ticket.ts"],
        ["schedule", "daily-review", "schedules/daily-review.ts"],
        ["schedule", "team/hourly", "schedules/team/hourly.ts"],
        ["tool", "current-time", "tools/current-time.tool.ts"],
        ["tool", "support/lookup-order", "agents/support/tools/lookup-order.tool.ts"],
        ["tool", "support/triage/classify", "agents/support/triage/classify.tool.ts"]
      ])
    }))

  it.scoped("an agent lists its tools by route id, its environment, model, schedules and playbooks", () =>
    Effect.gen(function*() {
      const manifest = manifestOf(yield* discoverProject(goodProject))
      expect(routeOf(manifest, "agent", "support")).toEqual({
        kind: "agent",
        id: "support",
        file: "agents/support/agent.ts",
        description: "Answers questions about orders",
        model: "openai:gpt-4.1-mini",
        tools: ["support/lookup-order", "current-time"],
        environment: "workspace",
        schedules: ["daily-review", "team/hourly"],
        playbooks: []
      })
      expect(routeOf(manifest, "agent", "support/triage")).toMatchObject({
        model: "demo",
        tools: ["support/triage/classify"],
        schedules: [],
        playbooks: ["urgent-ticket"]
      })
      expect(routeOf(manifest, "agent", "support/triage").environment).toBeUndefined()
    }))

  it.scoped("an agent lists its subagents by route id, with the tool its model calls each by", () =>
    Effect.gen(function*() {
      const manifest = manifestOf(yield* discoverProject({
        "agents/desk/agent.ts": `import { defineAgent } from "foundry"
import triage from "./triage/agent.js"
export default defineAgent({ description: "Front desk", subagents: [triage] })
`,
        "agents/desk/triage/agent.ts": `import { defineAgent } from "foundry"
export default defineAgent({ description: "Sorts tickets" })
`
      }))
      expect(routeOf(manifest, "agent", "desk").subagents).toEqual([{ agent: "desk/triage", tool: "ask-triage" }])
      // An agent without subagents has no such field, as before.
      expect(routeOf(manifest, "agent", "desk/triage").subagents).toBeUndefined()
    }))

  it.scoped("a tool lists the services it requires by key, and the agent whose folder holds it", () =>
    Effect.gen(function*() {
      const manifest = manifestOf(yield* discoverProject(goodProject))
      expect(routeOf(manifest, "tool", "support/lookup-order")).toEqual({
        kind: "tool",
        id: "support/lookup-order",
        file: "agents/support/tools/lookup-order.tool.ts",
        description: "Look up an order",
        requires: ["test/Orders"],
        agent: "support",
        input: expect.objectContaining({ type: "object", required: ["orderId"], properties: { orderId: { type: "string" } } })
      })
      const shared = routeOf(manifest, "tool", "current-time")
      expect(shared).toMatchObject({ requires: [], description: "The current time" })
      expect(shared.agent).toBeUndefined()
    }))

  it.scoped("schedules and playbooks name their agent by id, with timing and webhook path", () =>
    Effect.gen(function*() {
      const manifest = manifestOf(yield* discoverProject(goodProject))
      expect(routeOf(manifest, "schedule", "daily-review")).toEqual({
        kind: "schedule",
        id: "daily-review",
        file: "schedules/daily-review.ts",
        agent: "support",
        timing: { cron: "0 9 * * 1-5", timezone: "Europe/Berlin" }
      })
      expect(routeOf(manifest, "schedule", "team/hourly")).toMatchObject({ agent: "support", timing: { every: "1 hour" } })
      expect(routeOf(manifest, "playbook", "urgent-ticket")).toEqual({
        kind: "playbook",
        id: "urgent-ticket",
        file: "playbooks/urgent-ticket.ts",
        agent: "support/triage",
        webhook: "/hooks/tickets"
      })
      expect(routeOf(manifest, "environment", "workspace")).toMatchObject({ description: "A scratch workspace" })
    }))

  it.scoped("is plain JSON data: it survives a round trip unchanged", () =>
    Effect.gen(function*() {
      const manifest = manifestOf(yield* discoverProject(goodProject))
      expect(JSON.parse(JSON.stringify(manifest))).toEqual(manifest)
    }))

  it.scoped("a project without config has config null", () =>
    Effect.gen(function*() {
      const manifest = manifestOf(yield* discoverProject({ "agents/a/agent.ts": agentFile() }))
      expect(manifest).toEqual({
        generatedBy: "foundry",
        config: null,
        routes: [{
          kind: "agent",
          id: "a",
          file: "agents/a/agent.ts",
          description: "A test agent",
          model: "demo",
          tools: [],
          schedules: [],
          playbooks: []
        }]
      })
    }))
})

describe("routeTypesOf", () => {
  it.scoped("has an Agents interface keyed by agent id, typed by the agent file's default export", () =>
    Effect.gen(function*() {
      const text = routeTypesOf(yield* discoverProject(goodProject))
      const agents = /export interface Agents \{\n([^}]*)\}/.exec(text)?.[1] ?? expect.fail(`no Agents interface in:\n${text}`)
      const entries = [...agents.matchAll(/^ {2}"([^"]+)": typeof (\w+)$/gm)].map((m) => [m[1], m[2]])
      expect(entries.map(([id]) => id)).toEqual(["support", "support/triage"])
      for (const [id, name] of entries) {
        const file = id === "support" ? "agents/support/agent.js" : "agents/support/triage/agent.js"
        expect(text).toContain(`import type ${name} from "../${file}"`)
      }
      expect(text).toContain("export type AgentId = keyof Agents")
    }))

  it.scoped("has Tools, Playbooks, Schedules and Environments interfaces keyed by id", () =>
    Effect.gen(function*() {
      const text = routeTypesOf(yield* discoverProject(goodProject))
      const keysOf = (group: string) => {
        const body = new RegExp(`export interface ${group} \\{\\n([^}]*)\\}`).exec(text)?.[1] ?? expect.fail(`no ${group}`)
        return [...body.matchAll(/^ {2}"([^"]+)":/gm)].map((m) => m[1])
      }
      expect(keysOf("Tools").sort()).toEqual(["current-time", "support/lookup-order", "support/triage/classify"])
      expect(keysOf("Playbooks")).toEqual(["urgent-ticket"])
      expect(keysOf("Schedules")).toEqual(["daily-review", "team/hourly"])
      expect(keysOf("Environments")).toEqual(["workspace"])
    }))

  it.scoped("checks tool requirements against the config's layers, or against nothing without config", () =>
    Effect.gen(function*() {
      const withConfig = routeTypesOf(yield* discoverProject(goodProject))
      expect(withConfig).toContain(`import type config from "../foundry.config.js"`)
      expect(withConfig).toContain("ProvidedBy<typeof config>")
      expect(withConfig).toContain("export type MissingServices = Exclude<ToolRequirements<Tools[keyof Tools]>, ProvidedBy<typeof config>>")
      expect(requirementsCheck).toContain(`import type { MissingServices } from "./routes.js"`)
      expect(requirementsCheck).toContain("export type RequirementsCheck = RequireAllProvided<MissingServices>")
      const without = routeTypesOf(yield* discoverProject({ "tools/echo.tool.ts": toolFile() }))
      expect(without).not.toContain("import type config")
      expect(without).toContain("ToolRequirements<Tools[keyof Tools]>, never>")
    }))

  it.scoped("imports .mts and .js route files by their JavaScript names", () =>
    Effect.gen(function*() {
      const text = routeTypesOf(
        yield* discoverProject({ "agents/a/agent.mts": agentFile(), "tools/echo.tool.js": toolFile() })
      )
      expect(text).toContain(`from "../agents/a/agent.mjs"`)
      expect(text).toContain(`from "../tools/echo.tool.js"`)
      expect(text).not.toMatch(/from "[^"]*\.m?ts"/)
    }))
})

describe("writeGenerated", () => {
  it.scoped("writes .foundry/manifest.json, routes.d.ts and requirements-check.ts into the project", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(goodProject)
      const table = yield* discoverAt(root)
      expect(existsSync(join(root, ".foundry"))).toBe(false)
      yield* writeGenerated(table).pipe(Effect.provide(NodeContext.layer))
      const manifest: unknown = JSON.parse(readFileSync(join(root, ".foundry/manifest.json"), "utf8"))
      if (!isManifest(manifest)) return expect.fail("manifest.json is not a manifest")
      expect(manifest).toEqual(manifestOf(table))
      expect(readFileSync(join(root, ".foundry/routes.d.ts"), "utf8")).toBe(routeTypesOf(table))
      expect(readFileSync(join(root, ".foundry/requirements-check.ts"), "utf8")).toBe(requirementsCheck)
    }))

  it.scoped("the generated folder is not a route folder: discovery after writing is unchanged", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(goodProject)
      yield* writeGenerated(yield* discoverAt(root, 1)).pipe(Effect.provide(NodeContext.layer))
      const again = yield* discoverAt(root, 2)
      expect(manifestOf(again)).toEqual(manifestOf(yield* discoverAt(root, 3)))
      expect(again.agents.map((r) => r.id).sort()).toEqual(["support", "support/triage"])
    }))

  it.scoped("rewrites the files when routes change, and leaves unchanged files alone", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "agents/a/agent.ts": agentFile() })
      const write = (generation: number) =>
        Effect.flatMap(discoverAt(root, generation), (table) => writeGenerated(table).pipe(Effect.provide(NodeContext.layer)))
      const manifestFile = join(root, ".foundry/manifest.json")
      yield* write(1)
      const before = statSync(manifestFile).mtimeMs
      // Real time (the test clock would never advance): long enough for a rewrite to change mtime.
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 30)))
      yield* write(2)
      expect(statSync(manifestFile).mtimeMs).toBe(before)

      writeFiles(root, { "agents/b/agent.ts": agentFile({ description: "Another agent" }) })
      yield* write(3)
      const manifest: unknown = JSON.parse(readFileSync(manifestFile, "utf8"))
      if (!isManifest(manifest)) return expect.fail("manifest.json is not a manifest")
      expect(manifest.routes.map((r) => r.id)).toEqual(["a", "b"])
      expect(readFileSync(join(root, ".foundry/routes.d.ts"), "utf8")).toContain(`"b": typeof agent_1`)
    }))
})
