/**
 * Deploying to one runner of a cluster (runner processes sharing a PostgreSQL store): every runner
 * starts new runs on the release deployed, whichever runner was deployed to, and a run executes on
 * its release whichever runner picks it up.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { freePort, startCli } from "../support/cli.js"
import { freshDatabase, skipPostgres } from "../support/postgres.js"
import { http } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"
import { deskReleases, uploadOf } from "./deploySupport.js"

/** A runner of the cluster on `root`: its API's URL. */
const startRunner = (root: string) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const runnerPort = yield* freePort
    const runner = yield* startCli(["start", root, "--port", String(port), "--runner-port", String(runnerPort)])
    yield* runner.waitFor(/listening on/)
    return `http://127.0.0.1:${port}`
  })

/** Waits until the runner at `url` says release `id` is current. */
const serving = (url: string, id: string) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 200; attempt++) {
      const listed = (yield* http(`${url}/api/releases`)).json as ReadonlyArray<{ readonly id: string; readonly current: boolean }>
      if (listed.some((release) => release.id === id && release.current)) return
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.die(new Error(`${url} never served ${id}`))
  })

/** A run of the desk agent through the runner at `url`, to its end. */
const runThrough = (url: string) =>
  Effect.gen(function*() {
    const created = yield* http(`${url}/api/runs`, { body: { agent: "desk", message: "which release?" } })
    expect(created.status).toBe(202)
    const runId = (created.json as { readonly runId: string }).runId
    for (let attempt = 0; attempt < 400; attempt++) {
      const run = (yield* http(`${url}/api/runs/${runId}`)).json as { readonly status: string; readonly output?: string; readonly release?: string }
      if (run.status === "completed" || run.status === "failed") return run
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.die(new Error(`run ${runId} did not end`))
  })

describe.skipIf(skipPostgres)("deploying to a cluster", () => {
  it.scopedLive("a release deployed to one runner is what every runner starts new runs on", () =>
    Effect.gen(function*() {
      const { v1, v2 } = yield* deskReleases
      const databaseUrl = yield* freshDatabase
      const root = yield* tempProject({
        "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ store: { postgres: ${JSON.stringify(databaseUrl)} } })\n`
      })
      const [a, b] = yield* Effect.all([startRunner(root), startRunner(root)], { concurrency: 2 })
      if (a === undefined || b === undefined) return yield* Effect.die(new Error("two runners did not start"))

      expect((yield* http(`${a}/api/releases`, { body: uploadOf(v1.folder) })).json).toMatchObject({ id: v1.id, switched: true })
      yield* serving(b, v1.id)
      expect(yield* runThrough(b)).toMatchObject({ status: "completed", output: "the tool said: v1", release: v1.id })

      expect((yield* http(`${b}/api/releases`, { body: uploadOf(v2.folder) })).json).toMatchObject({ id: v2.id, switched: true })
      yield* serving(a, v2.id)
      expect(yield* runThrough(a)).toMatchObject({ status: "completed", output: "the tool said: v2", release: v2.id })
      expect(yield* runThrough(b)).toMatchObject({ status: "completed", output: "the tool said: v2", release: v2.id })

      // v1 deployed to b, then at once v2 to a, which may still serve v2 itself: a's deploy is decided
      // against the store's current release (v1), so it switches, and says what it changed.
      expect((yield* http(`${b}/api/releases`, { body: uploadOf(v1.folder) })).json).toMatchObject({ id: v1.id, switched: true })
      const back = (yield* http(`${a}/api/releases`, { body: uploadOf(v2.folder) })).json
      expect(back).toMatchObject({ id: v2.id, switched: true, current: v2.id, summary: { tools: { changed: ["desk/answer", "desk/confirm"] } } })
      yield* serving(b, v2.id)
      expect(yield* runThrough(b)).toMatchObject({ status: "completed", output: "the tool said: v2", release: v2.id })
    }), { timeout: 120_000 })
})
