/**
 * How many connections a process keeps open on a PostgreSQL store: `store.maxConnections` of the
 * config, all told (the pool, the group commit's writer, the listener), 12 when absent. Several
 * processes on one server (a cluster's runners) must fit its `max_connections` together (100 by
 * default, fewer on small hosted plans).
 */
import { randomBytes } from "node:crypto"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Stream } from "effect"
import { databaseLayer } from "../../src/cli/ProjectRuntime.js"
import { loadProject } from "../../src/compiler/loadProject.js"
import { Database } from "../../src/durable/Database.js"
import { connect, freshSchema, skipPostgres } from "../support/postgres.js"
import { tempProject } from "../support/tempProject.js"

/**
 * The most connections a project's store held open at once while 16 reads that take a while each
 * went at once, its config's store `store` over `url` (under a name of its own, counted by the server).
 */
const mostConnectionsWith = (store: (url: string) => string) =>
  Effect.gen(function*() {
    const name = `foundry-test-${randomBytes(4).toString("hex")}`
    const named = new URL(yield* freshSchema)
    named.searchParams.set("application_name", name)
    const root = yield* tempProject({
      "agents/helper/agent.ts": `import { defineAgent } from "foundry"\nexport default defineAgent({ description: "Helps", model: "demo", tools: [] })\n`,
      "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ store: ${store(named.toString())} })\n`
    })
    const app = yield* loadProject(root, 1)
    const database = Context.get(yield* Layer.build(databaseLayer(app, undefined)), Database)
    const server = yield* connect(named.toString())
    const counted = server<{ readonly n: number }>`SELECT COUNT(*)::int AS n FROM pg_stat_activity WHERE application_name = ${name} AND pid <> pg_backend_pid()`
    // Listening, as a process does once someone follows runs: the listener's connection counts.
    const channel = database.channel
    if (channel === undefined) return yield* Effect.dieMessage("a PostgreSQL store has a channel to other processes")
    yield* Effect.forkScoped(Stream.runDrain(channel.listen("foundry_test_connections")))
    let most = 0
    const counting = yield* Effect.fork(Effect.forever(Effect.gen(function*() {
      most = Math.max(most, (yield* counted)[0]?.n ?? 0)
      yield* Effect.sleep("20 millis")
    })))
    const reads = yield* Effect.forEach(
      Array.from({ length: 16 }, (_, i) => i),
      (i) => database.read({ sql: "SELECT ? AS i FROM pg_sleep(0.2)", params: [i] }),
      { concurrency: "unbounded" }
    )
    yield* Fiber.interrupt(counting)
    expect(reads.map((rows) => Number(rows[0]?.["i"]))).toEqual(Array.from({ length: 16 }, (_, i) => i))
    return most
  }).pipe(Effect.provide(NodeContext.layer))

describe.skipIf(skipPostgres)("the connections a process keeps open on a PostgreSQL store", () => {
  it.scopedLive("are store.maxConnections at most, the listener's among them: every read answers, some waiting for a connection", () =>
    Effect.gen(function*() {
      expect(yield* mostConnectionsWith((url) => `{ postgres: ${JSON.stringify(url)}, maxConnections: 4 }`)).toBe(4)
    }), 30_000)

  it.scopedLive("are 12 at most when the config does not say: a pool of 10 beside the writer and the listener", () =>
    Effect.gen(function*() {
      expect(yield* mostConnectionsWith((url) => `{ postgres: ${JSON.stringify(url)} }`)).toBe(12)
    }), 30_000)
})
