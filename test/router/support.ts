/**
 * Helpers shared by the router tests: discovery of temporary projects, narrowing of its failures,
 * and a complete good project that uses every kind of route.
 */
import { expect } from "@effect/vitest"
import { NodeContext } from "@effect/platform-node"
import { Effect } from "effect"
import { discover } from "../../src/router/discover.js"
import { type RouteError, RouteErrors } from "../../src/router/RouteError.js"
import { agentFile, type ProjectFiles, tempProject, toolFile } from "../support/tempProject.js"

/** Discovers the project at `root` as build `generation`, on the real file system. */
export const discoverAt = (root: string, generation = 1) => discover(root, generation).pipe(Effect.provide(NodeContext.layer))

/** A temporary project holding `files`, discovered once. */
export const discoverProject = (files: ProjectFiles) => Effect.flatMap(tempProject(files), (root) => discoverAt(root))

/** The route errors of discovering `root`; fails the test if discovery succeeds or fails otherwise. */
export const routeErrorsAt = (root: string, generation = 1) =>
  discoverAt(root, generation).pipe(
    Effect.matchEffect({
      onSuccess: () => Effect.die(new Error("discovery succeeded, but route errors were expected")),
      onFailure: (error) => error instanceof RouteErrors ? Effect.succeed(error) : Effect.die(error)
    })
  )

/** The route errors of a temporary project holding `files`. */
export const routeErrorsOf = (files: ProjectFiles) => Effect.flatMap(tempProject(files), (root) => routeErrorsAt(root))

/**
 * Checks that `errors` holds exactly one error and that it is about `file`: its `file` field is
 * the broken file and its message names it. Returns that error.
 */
export const onlyErrorFor = (errors: RouteErrors, file: string): RouteError => {
  expect(errors.errors.map((e) => e.file)).toEqual([file])
  const [error] = errors.errors
  if (error === undefined) return expect.fail("no error")
  expect(error.message).toContain(file)
  expect(error.message).toContain(error.problem)
  expect(error.message).toContain(error.fix)
  expect(errors.message).toContain("1 broken route file:")
  expect(errors.message).toContain(file)
  return error
}

/** The error about `file` among several; fails when there is none or more than one. */
export const errorFor = (errors: RouteErrors, file: string): RouteError => {
  const found = errors.errors.filter((e) => e.file === file)
  expect(found, `errors about ${file}`).toHaveLength(1)
  const [error] = found
  if (error === undefined) return expect.fail(`no error about ${file}`)
  expect(error.message).toContain(file)
  return error
}

export { agentFile, toolFile }

/** A service a tool requires, defined in a helper outside the route folders. */
const ordersService = `import { Context, Effect, Layer } from "effect"

export class Orders extends Context.Tag("test/Orders")<Orders, { readonly status: (id: string) => Effect.Effect<string> }>() {}

export const OrdersLive = Layer.succeed(Orders, { status: (id: string) => Effect.succeed(\`order \${id} shipped\`) })
`

/** A complete, valid project: nested agents, agent and shared tools, a schedule, a playbook, an environment, a config. */
export const goodProject: ProjectFiles = {
  "foundry.config.ts": `import { defineConfig } from "foundry"
import { OrdersLive } from "./lib/orders.js"

export default defineConfig({ server: { port: 5151 }, layers: [OrdersLive] })
`,
  "lib/orders.ts": ordersService,
  "agents/support/agent.ts": `import { defineAgent } from "foundry"
import workspace from "../../environments/workspace.js"
import currentTime from "../../tools/current-time.tool.js"
import lookupOrder from "./tools/lookup-order.tool.js"
import { describe } from "./lib/text.js"

export default defineAgent({
  description: describe("orders"),
  model: "openai:gpt-4.1-mini",
  tools: [lookupOrder, currentTime],
  environment: workspace,
  maxTurns: 8
})
`,
  "agents/support/lib/text.ts": `export const describe = (topic: string): string => \`Answers questions about \${topic}\`
`,
  "agents/support/tools/lookup-order.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
import { Orders } from "../../../lib/orders.js"

export default defineTool({
  description: "Look up an order",
  input: Schema.Struct({ orderId: Schema.String }),
  output: Schema.String,
  requires: [Orders],
  run: ({ orderId }) => Effect.flatMap(Orders, (orders) => orders.status(orderId))
})
`,
  "agents/support/triage/agent.ts": agentFile({
    description: "Classifies tickets",
    imports: `import classify from "./classify.tool.js"`,
    tools: ["classify"]
  }),
  "agents/support/triage/classify.tool.ts": toolFile("Classify a ticket"),
  "agents/support/notes.ts": `export const notes = "not a route"\n`,
  "tools/current-time.tool.ts": toolFile("The current time"),
  "tools/_format.ts": `export const format = (s: string) => s.trim()\n`,
  "environments/workspace.ts": `import { defineEnvironment } from "foundry"

export default defineEnvironment({ description: "A scratch workspace", files: { "notes.md": "hi" } })
`,
  "schedules/daily-review.ts": `import { defineSchedule } from "foundry"
import support from "../agents/support/agent.js"

export default defineSchedule({ cron: "0 9 * * 1-5", timezone: "Europe/Berlin", agent: support, message: "Review tickets" })
`,
  "schedules/team/hourly.ts": `import { defineSchedule } from "foundry"
import support from "../../agents/support/agent.js"

export default defineSchedule({ every: "1 hour", agent: support, message: "Check the queue" })
`,
  "playbooks/urgent-ticket.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import triage from "../agents/support/triage/agent.js"

export default definePlaybook({
  on: webhook("tickets", Schema.Struct({ id: Schema.String, body: Schema.String })),
  agent: triage,
  message: (ticket) => \`Classify: \${ticket.body}\`
})
`,
  "playbooks/types.d.ts": `export declare const nothing: string\n`
}
