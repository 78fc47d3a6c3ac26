/**
 * `defineConfig` and `ConfigSchema`: the defaults fill every field a project leaves out, and they
 * are themselves a valid config, so a project without `foundry.config.ts` always loads.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Layer, Schema } from "effect"
import { defaultConfig } from "../../src/definitions/configDefaults.js"
import { ConfigSchema } from "../../src/definitions/configSchema.js"
import { defineConfig } from "../../src/definitions/defineConfig.js"
import { kindOf } from "../../src/definitions/RouteKind.js"
import { configIssues } from "../../src/router/loadConfig.js"

class Orders extends Context.Tag("test/Orders")<Orders, { readonly status: string }>() {}

describe("defineConfig", () => {
  it("fills every field from the defaults, and the result matches the Schema", () => {
    const config = defineConfig({})
    expect(kindOf(config)).toBe("config")
    expect(configIssues(config)).toEqual([])
    expect(Schema.is(ConfigSchema)({ ...config })).toBe(true)
    expect(config).toMatchObject({ ...defaultConfig, layers: [], permissions: [], prices: {}, budget: {}, webhooks: {} })
  })

  it("documents the tunables' defaults: lease 3 seconds, body 1 MiB, heartbeat 15 seconds, misfire grace 1 minute", () => {
    expect(defaultConfig.leaseTtl).toBe("3 seconds")
    expect(defaultConfig.server.bodyLimit).toBe(1024 * 1024)
    expect(defaultConfig.server.sseHeartbeat).toBe("15 seconds")
    expect(defaultConfig.schedules.misfireGrace).toBe("1 minute")
  })

  it("treats a field set to undefined as left out", () => {
    const config = defineConfig({ concurrency: undefined, server: { port: undefined, host: "localhost" }, schedules: { misfireGrace: undefined } })
    expect(config.concurrency).toBe(50)
    expect(config.server).toEqual({ port: 4141, host: "localhost", bodyLimit: 1_048_576, sseHeartbeat: "15 seconds" })
    expect(config.schedules.misfireGrace).toBe("1 minute")
    expect(configIssues(config)).toEqual([])
  })

  it("keeps nested fields given alongside the defaults of the others", () => {
    const config = defineConfig({
      layers: [Layer.succeed(Orders, { status: "shipped" })],
      timers: { maxPendingPerInstance: 2 },
      events: { retention: { maxCount: 10 } },
      context: { soft: 0.3 }
    })
    expect(config.layers).toHaveLength(1)
    expect(config.timers).toEqual({ minInterval: "1 minute", maxPendingPerInstance: 2 })
    expect(config.events.retention).toEqual({ maxAge: "30 days", maxCount: 10 })
    expect(config.context).toEqual({ windows: {}, soft: 0.3, hard: 0.8 })
    expect(configIssues(config)).toEqual([])
  })

  it("gives scripts a ceiling of threads never below their workers, and refuses one set below them", () => {
    expect(defineConfig({}).scripts).toEqual({ workers: 4, maxWorkers: 8, maxMemoryMb: 256 })
    expect(defineConfig({ scripts: { workers: 12 } }).scripts).toEqual({ workers: 12, maxWorkers: 12, maxMemoryMb: 256 })
    expect(configIssues(defineConfig({ scripts: { workers: 6, maxWorkers: 5 } }))).toEqual([
      { path: "scripts", message: expect.stringContaining("maxWorkers (5) must not be below workers (6)") }
    ])
    expect(configIssues(defineConfig({ scripts: { maxMemoryMb: 8 } }))).toEqual([
      { path: "scripts.maxMemoryMb", message: expect.stringContaining("16 or more") }
    ])
  })

  it("keeps what it does not know, for loading to name it", () => {
    const fromJavaScript: Parameters<typeof defineConfig>[0] = JSON.parse(`{ "concurency": 5, "modelRetry": { "tims": 2 } }`)
    const issues = configIssues(defineConfig(fromJavaScript))
    expect(issues).toEqual([
      { path: "concurency", message: expect.stringMatching(/^is not allowed; did you mean "concurrency"\? \(the fields here: store, server, .*\)$/) },
      { path: "modelRetry.tims", message: expect.stringMatching(/^is not allowed; did you mean "times"\? \(the fields here: .*\)$/) }
    ])
  })
})
