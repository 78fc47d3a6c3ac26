/**
 * Loading `foundry.config.ts`: a config whose values are wrong (a JavaScript config, a cast) is
 * refused with an error that names the config file, the field, what was wrong and the fix; every
 * field left out gets its documented default.
 */
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Config, Duration, Effect } from "effect"
import { loadConfig } from "../../src/router/loadConfig.js"
import { tempProject } from "../support/tempProject.js"
import { agentFile, onlyErrorFor, routeErrorsOf } from "./support.js"

const configAt = (root: string) => loadConfig(root, 1).pipe(Effect.provide(NodeContext.layer))

const configFile = (fields: string, imports = "") => `import { defineConfig } from "foundry"
${imports}
export default defineConfig(${fields})
`

/** The error of loading a config with `files`; fails the test when the config loads. */
const configErrorOf = (files: Record<string, string>) =>
  Effect.flatMap(tempProject(files), (root) =>
    configAt(root).pipe(
      Effect.flip,
      Effect.flatMap((error) => error._tag === "RouteError" ? Effect.succeed(error) : Effect.die(error))
    ))

describe("a config with wrong values", () => {
  it.scoped("a negative concurrency is refused, naming foundry.config.ts, the field, what was wrong and the default", () =>
    Effect.gen(function*() {
      const error = yield* configErrorOf({ "foundry.config.ts": configFile(`{ concurrency: -1 } as never`) })
      expect(error._tag).toBe("RouteError")
      expect(error.file).toBe("foundry.config.ts")
      expect(error.problem).toBe("the config has a wrong field: concurrency: expected a whole number above 0, got -1")
      expect(error.fix).toContain("correct concurrency, or leave it out for its default, 50")
      expect(error.fix).toContain("in foundry.config.ts")
      expect(error.message).toMatch(/^foundry\.config\.ts: .*concurrency/)
    }))

  it.scoped("a JavaScript config gets every wrong field reported at once, budgets and permission rules included", () =>
    Effect.gen(function*() {
      const error = yield* configErrorOf({
        "foundry.config.js": configFile(`{
  toolOutputLimit: "x",
  approvalTimeout: "soon",
  context: { soft: 2 },
  budget: { maxCostPerRun: -5 },
  permissions: [{ tool: "refund", action: "maybe" }]
}`)
      })
      // The file the project actually has, not the usual name.
      expect(error.file).toBe("foundry.config.js")
      expect(error.problem).toContain("5 wrong fields")
      expect(error.problem).toContain(`toolOutputLimit: expected a number, got "x"`)
      expect(error.problem).toContain(`approvalTimeout: expected a duration such as "30 seconds"`)
      expect(error.problem).toContain(`got "soon"`)
      expect(error.problem).toContain("context.soft: expected a share of the context window, above 0 and at most 1 (e.g. 0.6), got 2")
      expect(error.problem).toContain("budget.maxCostPerRun: expected a number, 0 or more, got -5")
      expect(error.problem).toContain(`permissions[0].action: expected one of "allow", "ask", "deny", got "maybe"`)
      expect(error.fix).toContain(`correct approvalTimeout, or leave it out for its default, "10 minutes"`)
      expect(error.fix).toContain("correct permissions[0].action")
      expect(error.fix).toContain("in foundry.config.js")
    }))

  it.scoped("a misspelt field is named rather than ignored", () =>
    Effect.gen(function*() {
      const error = yield* configErrorOf({ "foundry.config.ts": configFile(`{ concurency: 5, server: { prot: 80 } } as never`) })
      expect(error.problem).toContain(`concurency: is not allowed; did you mean "concurrency"? (the fields here: store, server, layers, concurrency`)
      expect(error.problem).toContain(`server.prot: is not allowed; did you mean "port"? (the fields here: `)
      expect(error.fix).toContain("remove concurency or correct its name; remove server.prot or correct its name")
    }))

  it.scoped("the new tunables are checked too: a zero lease, a negative grace, a body limit that is not a number", () =>
    Effect.gen(function*() {
      const error = yield* configErrorOf({
        "foundry.config.ts": configFile(`{ leaseTtl: "0 seconds", schedules: { misfireGrace: -1 }, server: { bodyLimit: "1mb" } } as never`)
      })
      expect(error.problem).toContain(`leaseTtl: expected a duration above zero such as "3 seconds" or "10 minutes", got "0 seconds"`)
      expect(error.problem).toContain("schedules.misfireGrace: expected a duration")
      expect(error.problem).toContain(`server.bodyLimit: expected a number, got "1mb"`)
      expect(error.fix).toContain(`correct leaseTtl, or leave it out for its default, "3 seconds"`)
      expect(error.fix).toContain("correct server.bodyLimit, or leave it out for its default, 1048576")
    }))

  it.scoped("an images budget of no images, or of bytes that are not a number, is refused naming the field and its default", () =>
    Effect.gen(function*() {
      const error = yield* configErrorOf({ "foundry.config.ts": configFile(`{ images: { maxPerRequest: 0, maxBytesPerRequest: "12mb" } } as never`) })
      expect(error.problem).toContain("images.maxPerRequest: expected a whole number above 0, got 0")
      expect(error.problem).toContain(`images.maxBytesPerRequest: expected a number, got "12mb"`)
      expect(error.fix).toContain("correct images.maxPerRequest, or leave it out for its default, 50")
      expect(error.fix).toContain("correct images.maxBytesPerRequest, or leave it out for its default, 12000000")
    }))

  it.scoped("a PostgreSQL store's connectTimeout must be a duration above zero", () =>
    Effect.gen(function*() {
      const error = yield* configErrorOf({
        "foundry.config.ts": configFile(`{ store: { postgres: "postgres://127.0.0.1/db", connectTimeout: "soon" } } as never`)
      })
      expect(error.problem).toContain(`store: expected { sqlite: "<file>" } or { postgres: "<url>" }`)
      expect(error.problem).toContain(`connectTimeout, if given, a duration above zero such as "30 seconds"`)
    }))

  it.scoped("a PostgreSQL store's maxConnections must be a whole number of at least 4", () =>
    Effect.gen(function*() {
      const error = yield* configErrorOf({
        "foundry.config.ts": configFile(`{ store: { postgres: "postgres://127.0.0.1/db", maxConnections: 2 } }`)
      })
      expect(error.problem).toContain("maxConnections, if given, a whole number of at least 4 (12 when absent)")
    }))

  it.scoped("a store that is neither sqlite nor postgres says what a store looks like", () =>
    Effect.gen(function*() {
      const error = yield* configErrorOf({ "foundry.config.ts": configFile(`{ store: { mysql: "x" } } as never`) })
      expect(error.problem).toContain(`store: expected { sqlite: "<file>" } or { postgres: "<url>" }`)
    }))

  it.scoped("a layer that is not a Layer is named by its place in the list", () =>
    Effect.gen(function*() {
      const error = yield* configErrorOf({ "foundry.config.ts": configFile(`{ layers: [42] } as never`) })
      expect(error.problem).toContain("layers[0]: expected an Effect Layer, got 42")
    }))

  it.scoped("a summary model that is no model's name is refused, not summarized by the demo model", () =>
    Effect.gen(function*() {
      const error = yield* configErrorOf({ "foundry.config.ts": configFile(`{ context: { windows: {}, summaryModel: "gpt-4.1-nano" } }`) })
      expect(error.problem).toContain(`summaryModel "gpt-4.1-nano" is not known: use "openai:<model>"`)
    }))

  it.scoped("discovery refuses the build with the config's error beside the route files'", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({
        "agents/support/agent.ts": agentFile(),
        "foundry.config.ts": configFile(`{ context: { soft: 0.9, hard: 0.7 } }`)
      })
      const error = onlyErrorFor(errors, "foundry.config.ts")
      expect(error.problem).toContain("context: soft (0.9) must not be above hard (0.7)")
    }))
})

describe("a config with right values", () => {
  it.scoped("every field left out gets its default, the tunables included", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "foundry.config.ts": configFile(`{ server: { port: 5151 }, modelRetry: { times: 1 } }`) })
      const { config, configFile: file } = yield* configAt(root)
      expect(file).toBe("foundry.config.ts")
      expect(config.server).toEqual({ port: 5151, host: "127.0.0.1", bodyLimit: 1_048_576, sseHeartbeat: "15 seconds" })
      expect(config.modelRetry).toEqual({ times: 1, base: "200 millis", max: "10 seconds", idle: "3 minutes" })
      expect(config.leaseTtl).toBe("3 seconds")
      expect(config.schedules).toEqual({ misfireGrace: "1 minute" })
      expect(config.store).toEqual({ sqlite: ".foundry/foundry.db" })
      expect(config.concurrency).toBe(50)
      expect(config.toolOutputLimit).toBe(16_000)
      expect(config.context).toEqual({ windows: {}, soft: 0.6, hard: 0.8 })
      expect(config.events).toEqual({ retention: { maxAge: "30 days" }, pruneEvery: "10 minutes" })
      expect(config.permissions).toEqual([])
      expect(config.budget).toEqual({})
      expect(config.images).toEqual({ maxBytesPerRequest: 12_000_000, maxPerRequest: 50 })
    }))

  it.scoped("an images budget given in part keeps the default of the other field", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "foundry.config.ts": configFile(`{ images: { maxPerRequest: 10 } }`) })
      expect((yield* configAt(root)).config.images).toEqual({ maxBytesPerRequest: 12_000_000, maxPerRequest: 10 })
    }))

  it.scoped("a project without a config file gets the defaults", () =>
    Effect.gen(function*() {
      const { config, configFile: file } = yield* configAt(yield* tempProject({}))
      expect(file).toBeUndefined()
      expect(config.leaseTtl).toBe("3 seconds")
      expect(config.server.bodyLimit).toBe(1_048_576)
    }))

  it.scoped("a config that sets every field loads as written", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "lib/orders.ts": `import { Context, Effect, Layer } from "effect"
export class Orders extends Context.Tag("Orders")<Orders, { readonly status: (id: string) => Effect.Effect<string> }>() {}
export const OrdersLive = Layer.succeed(Orders, { status: (id) => Effect.succeed("shipped " + id) })
`,
        "foundry.config.ts": configFile(
          `{
  store: { postgres: Config.redacted("FOUNDRY_TEST_DATABASE_URL") },
  server: { port: 4242, host: "localhost", bodyLimit: 65_536, sseHeartbeat: "5 seconds" },
  layers: [OrdersLive],
  concurrency: 8,
  maxToolFailures: 5,
  modelRetry: { times: 0, base: "1 millis", max: "2 millis" },
  approvalTimeout: "1 hour",
  permissions: [
    { agent: "support", tool: "refund", action: "allow" },
    { tool: "refund", action: "deny", reason: "only support refunds" },
    { tool: "github_*", action: "ask" }
  ],
  toolTimeout: 30_000,
  toolOutputLimit: 8_000,
  timers: { minInterval: "15 minutes", maxPendingPerInstance: 0 },
  context: { windows: { "openai:my-model": 32_000 }, soft: 0.5, hard: 0.5 },
  prices: { "openai:my-model": { input: 1, output: 2.5, cached: 0.25 } },
  budget: { maxTokensPerRun: 200_000, maxCostPerRun: 0.5, maxTokensPerInstancePerDay: 1_000_000, maxCostPerInstancePerDay: 5 },
  webhooks: { tickets: { secret: Config.redacted("TICKETS_SECRET") }, plain: { secret: "s3cret" }, open: {} },
  events: { retention: { maxAge: "7 days", maxCount: 1_000_000 }, pruneEvery: "1 hour" },
  leaseTtl: "10 seconds",
  schedules: { misfireGrace: "5 minutes" },
  images: { maxBytesPerRequest: 20_000_000, maxPerRequest: 20 }
}`,
          `import { Config } from "effect"\nimport { OrdersLive } from "./lib/orders.js"`
        )
      })
      const { config } = yield* configAt(root)
      expect(config.server).toEqual({ port: 4242, host: "localhost", bodyLimit: 65_536, sseHeartbeat: "5 seconds" })
      expect(config.layers).toHaveLength(1)
      expect(config.permissions.map((rule) => rule.action)).toEqual(["allow", "deny", "ask"])
      expect(config.toolTimeout).toBe(30_000)
      expect(config.budget.maxCostPerRun).toBe(0.5)
      expect(config.prices).toEqual({ "openai:my-model": { input: 1, output: 2.5, cached: 0.25 } })
      expect(config.leaseTtl).toBe("10 seconds")
      expect(config.images).toEqual({ maxBytesPerRequest: 20_000_000, maxPerRequest: 20 })
      expect(Duration.toMillis(Duration.decode(config.schedules.misfireGrace))).toBe(300_000)
      // Config values stay Config values, read when the store opens or a delivery arrives.
      const store = config.store
      expect("postgres" in store && Config.isConfig(store.postgres)).toBe(true)
      expect(Config.isConfig(config.webhooks.tickets?.secret)).toBe(true)
      expect(config.webhooks.plain?.secret).toBe("s3cret")
    }))
})
