/**
 * `idle-instances`: 10,000 agent instances, each with one conversation that has had one short
 * completed run (made through the dispatcher, as an HTTP request would), then left idle. The
 * figure is the resident memory they cost the process: RSS after minus RSS before, each taken
 * once the process has settled after a full GC.
 */
import { statSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import * as Scripted from "../../src/models/scripted.js"
import { tempProject } from "../support/project.js"
import { progress, settledMemory, startRuntime, timedRun } from "../support/runtime.js"
import { collectGarbage, mb, round } from "../support/stats.js"

const instances = 10_000
const inFlight = 50
const warmUp = 200

const agent = `import { defineAgent } from "foundry"

export default defineAgent({ description: "Says hello", model: "demo", maxTurns: 2 })
`

export const idleInstances = Effect.gen(function*() {
  const dir = yield* tempProject({})
  const root = yield* tempProject({
    "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ concurrency: ${inFlight} })\n`,
    "agents/greeter/agent.ts": agent
  })
  const storeFile = join(dir, "foundry.db")
  const runtime = yield* startRuntime(root, { storeFile, model: Scripted.make([{ text: "Hello!" }]) })
  const submitMany = (prefix: string, count: number) =>
    Effect.forEach(
      Array.from({ length: count }, (_, i) => i),
      (i) => timedRun(runtime, { agent: "greeter", instance: `${prefix}-${i}`, message: "Hi" }),
      { concurrency: inFlight, discard: true }
    )

  yield* progress(`idle-instances: warming up (${warmUp} instances)`)
  yield* submitMany("warm", warmUp)
  const gcAvailable = collectGarbage()
  const before = yield* settledMemory

  yield* progress(`idle-instances: ${instances} instances, one conversation and one completed run each`)
  const started = performance.now()
  yield* submitMany("idle", instances)
  const elapsedMs = performance.now() - started
  const after = yield* settledMemory

  const stored = yield* runtime.store.listRuns({ agent: "greeter", status: "completed", limit: 100_000 })
  const rssDelta = after.rss - before.rss
  const storeBytes = ["", "-wal"].reduce((sum, suffix) => sum + (statSync(storeFile + suffix, { throwIfNoEntry: false })?.size ?? 0), 0)
  return {
    scenario: "idle-instances",
    instances,
    conversationsPerInstance: 1,
    runsCompleted: stored.length - warmUp,
    setupMs: round(elapsedMs, 0),
    gcBeforeMeasuring: gcAvailable,
    rssBeforeMb: mb(before.rss),
    rssAfterMb: mb(after.rss),
    rssDeltaMb: mb(rssDelta),
    heapUsedDeltaMb: mb(after.heapUsed - before.heapUsed),
    externalDeltaMb: mb(after.external - before.external),
    rssBytesPerInstance: round(rssDelta / instances, 0),
    heapBytesPerInstance: round((after.heapUsed - before.heapUsed) / instances, 0),
    storeFileMb: mb(storeBytes),
    target: { rssDeltaMb: "< 100 for 10,000" },
    meetsTarget: { rssDelta: rssDelta < 100 * 1024 * 1024 }
  }
}).pipe(Effect.scoped)
