/**
 * `idle-environments`: 1,000 agent instances, each with its own working environment, each having
 * written a script and run it (so each had a worker thread and a tree in memory), then left idle.
 * The figures: worker threads and open sessions once idle (the target is none), and the resident
 * memory the instances still cost (RSS after minus RSS before, each taken once settled).
 */
import { join } from "node:path"
import { Effect } from "effect"
import * as Scripted from "../../src/models/scripted.js"
import { tempProject } from "../support/project.js"
import { progress, settledMemory, startRuntime, timedRun } from "../support/runtime.js"
import { collectGarbage, mb, round } from "../support/stats.js"

const instances = 1_000
const inFlight = 20
const warmUp = 20
/** How long an idle environment keeps its tree and worker here (a minute and 30 s by default). */
const idleMs = 2_000

const files = {
  "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ concurrency: ${inFlight} })\n`,
  "environments/workspace.ts": `import { defineEnvironment } from "foundry"\nexport default defineEnvironment({ files: { "/inbox/data.txt": "1 2 3" } })\n`,
  "agents/analyst/agent.ts": `import { defineAgent } from "foundry"
import workspace from "../../environments/workspace.js"

export default defineAgent({ description: "Sums numbers with a script", model: "demo", environment: workspace, maxTurns: 4 })
`
}

const script = `import { readText, writeFile } from "env:fs"
export default async function () {
  const sum = (await readText("/inbox/data.txt")).split(" ").map(Number).reduce((a, b) => a + b, 0)
  await writeFile("/out/sum.txt", String(sum))
  return sum
}
`

const model = Scripted.make([
  { toolCalls: [{ name: "write_file", arguments: { path: "/scripts/sum.js", content: script } }] },
  { toolCalls: [{ name: "run_script", arguments: { path: "/scripts/sum.js" } }] },
  { text: "The sum is 6." }
])

export const idleEnvironments = Effect.gen(function*() {
  const dir = yield* tempProject({})
  const root = yield* tempProject(files)
  const runtime = yield* startRuntime(root, {
    storeFile: join(dir, "foundry.db"),
    model,
    environments: { sessionIdle: idleMs, workerIdleMs: idleMs }
  })
  const submitMany = (prefix: string, count: number) =>
    Effect.forEach(
      Array.from({ length: count }, (_, i) => i),
      (i) => timedRun(runtime, { agent: "analyst", instance: `${prefix}-${i}`, message: "Sum the data" }),
      { concurrency: inFlight, discard: true }
    )
  const idle = Effect.sleep(idleMs * 2 + 500)

  yield* progress(`idle-environments: warming up (${warmUp} instances)`)
  yield* submitMany("warm", warmUp)
  yield* idle
  const gcAvailable = collectGarbage()
  const before = yield* settledMemory

  yield* progress(`idle-environments: ${instances} instances, each writing and running a script`)
  const started = performance.now()
  yield* submitMany("idle", instances)
  const elapsedMs = performance.now() - started
  const busyWorkers = yield* runtime.scripts.workers
  yield* progress("idle-environments: waiting for the instances to go idle")
  yield* idle
  const after = yield* settledMemory
  const workers = yield* runtime.scripts.workers
  const sessions = yield* runtime.environments.openSessions
  const completed = yield* runtime.store.listRuns({ agent: "analyst", status: "completed", limit: 100_000 })
  const rssDelta = after.rss - before.rss
  return {
    scenario: "idle-environments",
    instances,
    runsCompleted: completed.length - warmUp,
    setupMs: round(elapsedMs, 0),
    msPerInstance: round(elapsedMs / instances, 1),
    workersRightAfter: busyWorkers,
    workersIdle: workers,
    sessionsIdle: sessions,
    gcBeforeMeasuring: gcAvailable,
    rssBeforeMb: mb(before.rss),
    rssAfterMb: mb(after.rss),
    rssDeltaMb: mb(rssDelta),
    heapUsedDeltaMb: mb(after.heapUsed - before.heapUsed),
    target: { workersIdle: 0, rssDeltaMb: "< 50 for 1,000" },
    meetsTarget: { workersIdle: workers === 0 && sessions === 0, rssDelta: rssDelta < 50 * 1024 * 1024 }
  }
}).pipe(Effect.scoped)
