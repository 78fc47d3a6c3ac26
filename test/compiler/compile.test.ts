import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { loadProject } from "../../src/compiler/loadProject.js"
import { tempProject } from "../support/tempProject.js"

const ordersService = `import { Context, Effect, Layer } from "effect"

export class Orders extends Context.Tag("Orders")<Orders, { readonly status: (id: string) => Effect.Effect<string> }>() {}

export const OrdersLive = Layer.succeed(Orders, { status: (id) => Effect.succeed("shipped " + id) })

export const OrdersBroken = Layer.effect(Orders, Effect.fail({ _tag: "DatabaseDown", message: "cannot reach the orders database" }))
`

const project = (config: string) => ({
  "lib/orders.ts": ordersService,
  "agents/shop/agent.ts": `import { defineAgent } from "foundry"
import lookup from "./tools/lookup.tool.js"
export default defineAgent({ description: "Shop", tools: [lookup] })
`,
  "agents/shop/tools/lookup.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
import { Orders } from "../../../lib/orders.js"

export default defineTool({
  description: "Look up an order",
  input: Schema.Struct({ id: Schema.String }),
  output: Schema.String,
  requires: [Orders],
  run: ({ id }) => Effect.flatMap(Orders, (orders) => orders.status(id))
})
`,
  "foundry.config.ts": config
})

const load = (root: string) => loadProject(root, 1).pipe(Effect.provide(NodeContext.layer))

describe("the compiler", () => {
  it.scoped("reports a service no layer provides with the tool's and the service's names", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project(`import { defineConfig } from "foundry"
export default defineConfig({ layers: [] })
`))
      const error = yield* Effect.flip(load(root))
      expect(error._tag).toBe("MissingServices")
      expect(error.message).toContain(`tool "shop/lookup"`)
      expect(error.message).toContain("agents/shop/tools/lookup.tool.ts")
      expect(error.message).toContain("requires the service Orders")
      expect(error.message).toContain("foundry.config.ts")
    }))

  it.scoped("builds when a layer in the config provides every required service", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project(`import { defineConfig } from "foundry"
import { OrdersLive } from "./lib/orders.js"
export default defineConfig({ layers: [OrdersLive] })
`))
      const app = yield* load(root)
      const agent = app.agents.get("shop")
      // Its own tool only: the timer tools are for agents that opt in with `timers`.
      expect([...(agent?.tools.keys() ?? [])]).toEqual(["lookup"])
      expect(agent?.tools.get("lookup")?.spec.parameters).toMatchObject({
        type: "object",
        required: ["id"],
        properties: { id: { type: "string" } }
      })
    }))

  it.scoped("reports a layer that fails to build, naming the config file and the cause", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project(`import { defineConfig } from "foundry"
import { OrdersBroken } from "./lib/orders.js"
export default defineConfig({ layers: [OrdersBroken] })
`))
      const error = yield* Effect.flip(load(root))
      expect(error._tag).toBe("LayerBuildError")
      expect(error.message).toContain("foundry.config.ts")
    }))

  it.scoped("rejects two tools of one agent that the model would know by the same name", () =>
    Effect.gen(function*() {
      const tool = `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
export default defineTool({ description: "Echo", input: Schema.Struct({ text: Schema.String }), output: Schema.String, run: ({ text }) => Effect.succeed(text) })
`
      const root = yield* tempProject({
        "tools/echo.tool.ts": tool,
        "agents/a/tools/echo.tool.ts": tool,
        "agents/a/agent.ts": `import { defineAgent } from "foundry"
import shared from "../../tools/echo.tool.js"
import own from "./tools/echo.tool.js"
export default defineAgent({ description: "A", tools: [shared, own] })
`
      })
      const error = yield* Effect.flip(load(root))
      expect(error.message).toContain("agents/a/agent.ts")
      expect(error.message).toContain(`two tools are both named "echo"`)
    }))

  it.scoped("reports an environment's pure module whose package is not installed, at the environment's file", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "environments/desk.ts": `import { defineEnvironment, definePureModule } from "foundry"
export default defineEnvironment({ modules: [definePureModule({ name: "nope", from: "no-such-package-xyz/sub", pick: ["x"] })] })
`,
        "agents/a/agent.ts": `import { defineAgent } from "foundry"
import desk from "../../environments/desk.js"
export default defineAgent({ description: "A", environment: desk })
`
      })
      const error = yield* Effect.flip(load(root))
      expect(error._tag).toBe("RouteErrors")
      if (error._tag !== "RouteErrors") return
      expect(error.errors.map((e) => [e.file, e.problem, e.fix])).toEqual([[
        "environments/desk.ts",
        `the pure module "nope" is made from "no-such-package-xyz/sub", and the package "no-such-package-xyz" is not installed`,
        "install it in the project (npm install no-such-package-xyz), or fix the name in from"
      ]])
    }))

  it.scoped("reports a tool name models cannot take at the tool's file, not at the agent that lists it", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "tools/echo.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
export default defineTool({ name: "bad name!", description: "Echo", input: Schema.Struct({}), output: Schema.String, run: () => Effect.succeed("") })
`,
        "agents/a/agent.ts": `import { defineAgent } from "foundry"
import echo from "../../tools/echo.tool.js"
export default defineAgent({ description: "A", tools: [echo] })
`
      })
      const error = yield* Effect.flip(load(root))
      expect(error._tag).toBe("RouteErrors")
      if (error._tag !== "RouteErrors") return
      expect(error.errors.map((e) => [e.file, e.problem])).toEqual([["tools/echo.tool.ts", `tool name "bad name!" is not valid for models (letters, digits, _ and -, at most 64)`]])
    }))

  it.scoped("reports a tool description longer than models take at the tool's file, with its length", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "tools/echo.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
export default defineTool({ description: "${"Echoes. ".repeat(140)}", input: Schema.Struct({}), output: Schema.String, run: () => Effect.succeed("") })
`,
        "agents/a/agent.ts": `import { defineAgent } from "foundry"
import echo from "../../tools/echo.tool.js"
export default defineAgent({ description: "A", tools: [echo] })
`
      })
      const error = yield* Effect.flip(load(root))
      expect(error._tag).toBe("RouteErrors")
      if (error._tag !== "RouteErrors") return
      expect(error.errors.map((e) => [e.file, e.problem, e.fix])).toEqual([[
        "tools/echo.tool.ts",
        `tool "echo" has a description of ${"Echoes. ".repeat(140).length} characters, more than models take (OpenAI: 1024)`,
        "shorten its description; put the rest in the agent's instructions"
      ]])
    }))

  it.scoped("offers a tool whose input has Schema.Object with every object given properties and every array items, as OpenAI requires", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "tools/tag.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
export default defineTool({ description: "Tag", input: Schema.Struct({ meta: Schema.Object }), output: Schema.String, run: () => Effect.succeed("") })
`,
        "agents/a/agent.ts": `import { defineAgent } from "foundry"
import tag from "../../tools/tag.tool.js"
export default defineAgent({ description: "A", tools: [tag] })
`
      })
      const app = yield* load(root)
      const parameters = app.agents.get("a")?.tools.get("tag")?.spec.parameters
      expect(parameters).toMatchObject({
        type: "object",
        properties: { meta: { anyOf: [{ type: "object", properties: {} }, { type: "array", items: {} }] } }
      })
    }))

  it.scoped("reports an installable tool that no model could be offered (a bad name, an input not an object) at its file, though no agent lists it", () =>
    Effect.gen(function*() {
      const installableTool = (fields: string) => `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
export default defineTool({
  description: "Look a customer up",
  ${fields},
  output: Schema.String,
  installable: { config: Schema.Struct({ url: Schema.String }) },
  run: () => Effect.succeed("")
})
`
      const root = yield* tempProject({
        "agents/a/agent.ts": `import { defineAgent } from "foundry"\nexport default defineAgent({ description: "A" })\n`,
        "tools/lookup.tool.ts": installableTool(`name: "crm.lookup", input: Schema.Struct({ id: Schema.String })`),
        "tools/search.tool.ts": installableTool(`input: Schema.String`),
        "tools/fine.tool.ts": installableTool(`name: "crm_lookup", input: Schema.Struct({ id: Schema.String })`)
      })
      const errors = yield* Effect.match(load(root), {
        onFailure: (error) => error._tag === "RouteErrors" ? error.errors.map((e) => [e.file, e.problem, e.fix]) : error._tag,
        onSuccess: () => "built"
      })
      const why = ": the tool is installable, and every run of an instance that installs it would fail at the model"
      expect(errors).toEqual([
        [
          "tools/lookup.tool.ts",
          `tool name "crm.lookup" is not valid for models (letters, digits, _ and -, at most 64)${why}`,
          `give the tool another name: defineTool({ name: "..." })`
        ],
        [
          "tools/search.tool.ts",
          `tool "search" has an input that is not an object${why}`,
          "make its input a Schema.Struct({ ... }) (models pass named arguments)"
        ]
      ])
    }))

  it.scoped("reports a catalogue MCP server whose mount name is over 32 characters at its file; one of 32 and two of one name in other folders build", () =>
    Effect.gen(function*() {
      const server = `import { Schema } from "effect"
import { defineMcpServer } from "foundry"
export default defineMcpServer({
  description: "A CRM",
  installable: { config: Schema.Struct({ url: Schema.String }) },
  connect: ({ url }) => ({ url })
})
`
      const root = yield* tempProject({
        "agents/a/agent.ts": `import { defineAgent } from "foundry"\nexport default defineAgent({ description: "A" })\n`,
        "mcp/customer-relationship-management-eu.ts": server,
        "mcp/customer-relationship-management.ts": server,
        "mcp/sales/crm.ts": server,
        "mcp/support/crm.ts": server
      })
      // Not the build itself when it builds: printing an app's services takes the reporter minutes.
      const errors = yield* Effect.match(load(root), {
        onFailure: (error) => error._tag === "RouteErrors" ? error.errors.map((e) => [e.file, e.problem, e.fix]) : error._tag,
        onSuccess: () => "built"
      })
      expect(errors).toEqual([[
        "mcp/customer-relationship-management-eu.ts",
        `an installed MCP server is mounted under the last part of its id, "customer-relationship-management-eu", which is 35 characters, ` +
        "over the 32 a server name may have: no run could mount it",
        "rename the file to a name of at most 32 letters, digits, - and _ (mcp/<name>.ts, or mcp/<folder>/<name>.ts); " +
        "instances install it again under its new id"
      ]])
    }))
})
