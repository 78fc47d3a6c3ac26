/**
 * The settings a server reads once, as it starts: a reload of `foundry dev` or a deploy that
 * changes one says it takes effect only after a restart, naming it.
 */
import { describe, expect, it } from "@effect/vitest"
import { changedSettings, startSettings } from "../../src/compiler/startSettings.js"
import { defineConfig } from "../../src/definitions/defineConfig.js"

const postgres = "postgres://db.internal/foundry"

describe("the settings a server reads as it starts", () => {
  it("a PostgreSQL store's connectTimeout and maxConnections are named when they change, and nothing when none does", () => {
    const started = startSettings(defineConfig({ store: { postgres } }))
    expect(changedSettings(started, startSettings(defineConfig({ store: { postgres } })))).toBeUndefined()
    expect(changedSettings(started, startSettings(defineConfig({ store: { postgres, maxConnections: 6 } })))).toBe("store.maxConnections")
    expect(changedSettings(started, startSettings(defineConfig({ store: { postgres, connectTimeout: "5 seconds", maxConnections: 6 } }))))
      .toBe("store.connectTimeout and store.maxConnections")
  })
})
