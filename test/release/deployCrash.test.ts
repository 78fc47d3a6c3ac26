/**
 * A server killed (SIGKILL) while a run of the release before the current one is in flight: on
 * restart the store's current release serves new runs, and the run resumes on its own release,
 * loaded from the store (the release cache is gone), or from the release folder the server was
 * started on, or from the same sources; a run whose sources changed goes on the current release,
 * and its record says so.
 */
import { cpSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { CliProcess } from "../support/cli.js"
import { apiOf, deploy, deskReleases, deskSources, emptyServerProject, startServer, tokensFor, uploadOf } from "./deploySupport.js"

/** Kills the server with SIGKILL and waits until it is gone. */
const kill = (server: CliProcess) =>
  Effect.async<void>((resume) => {
    server.child.once("exit", () => resume(Effect.void))
    server.child.kill("SIGKILL")
  })

describe("deploy and crash", () => {
  it.scopedLive("a v1 run in flight when the server is killed after v2 was deployed resumes on v1 after a restart; new runs start on v2", () =>
    Effect.gen(function*() {
      const { v1, v2 } = yield* deskReleases
      const root = yield* emptyServerProject
      const tokens = yield* tokensFor(root)
      const first = yield* startServer([root])
      const before = apiOf(first.url, tokens.admin.token)
      expect((yield* deploy(first.url, tokens.deploy.token, uploadOf(v1.folder))).status).toBe(200)
      const slow = yield* before.submit("slow, please")
      yield* before.until("the slow run's tool call", before.events(slow), (events) => events.some((e) => e.type === "tool.call.started"))
      expect((yield* deploy(first.url, tokens.deploy.token, uploadOf(v2.folder))).status).toBe(200)
      expect((yield* before.run(slow)).status).toBe("running")

      yield* kill(first.server)
      // Nothing of the releases is left on disk: the restarted server has them from the store alone.
      rmSync(join(root, ".foundry/release-cache"), { recursive: true, force: true })

      const second = yield* startServer([root])
      expect(second.server.output()).toContain(`release: ${v2.id}`)
      yield* second.server.waitFor(/resumed 1 unfinished run/)
      const after = apiOf(second.url, tokens.admin.token)
      const resumed = yield* after.ended(slow)
      expect(resumed).toMatchObject({ status: "completed", output: "the tool said: v1", release: v1.id })
      const events = yield* after.events(slow)
      expect(events.map((e) => e.type)).toContain("run.resumed")
      expect(events.filter((e) => e.type === "tool.call.completed").map((e) => e.data.output)).toEqual(["v1"])
      expect(new Set(events.map((e) => e.release))).toEqual(new Set([v1.id]))

      const fresh = yield* after.ended(yield* after.submit("and now?"))
      expect(fresh).toMatchObject({ status: "completed", output: "the tool said: v2", release: v2.id })
    }), { timeout: 120_000 })

  it.scopedLive("a run of the release folder a server was started on resumes on it after a restart, though the store keeps only the release deployed since", () =>
    Effect.gen(function*() {
      const { v1, v2 } = yield* deskReleases
      const app = join(mkdtempSync(join(tmpdir(), "foundry-deploy-server-")), "app")
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(join(app, ".."), { recursive: true, force: true })))
      cpSync(v1.folder, app, { recursive: true })
      const tokens = yield* tokensFor(app)
      // Started as a folder, not with --release: v1 is served, never kept in the store.
      const first = yield* startServer([app])
      const before = apiOf(first.url, tokens.admin.token)
      const slow = yield* before.submit("slow, please")
      yield* before.until("the slow run's tool call", before.events(slow), (events) => events.some((e) => e.type === "tool.call.started"))
      expect((yield* deploy(first.url, tokens.deploy.token, uploadOf(v2.folder))).status).toBe(200)
      yield* kill(first.server)
      rmSync(join(app, ".foundry/release-cache"), { recursive: true, force: true })

      const second = yield* startServer([app])
      expect(second.server.output()).toContain(`release: ${v2.id}`)
      const after = apiOf(second.url, tokens.admin.token)
      expect(yield* after.ended(slow)).toMatchObject({ status: "completed", output: "the tool said: v1", release: v1.id })
      expect(yield* after.ended(yield* after.submit("and now?"))).toMatchObject({ output: "the tool said: v2", release: v2.id })
    }), { timeout: 120_000 })

  it.scopedLive("runs waiting on a person on a server's sources resume on them after a deploy and a restart on the same sources, and on the current release, which their record names, once the sources changed", () =>
    Effect.gen(function*() {
      const { v2 } = yield* deskReleases
      const sources = yield* deskSources("v1")
      const tokens = yield* tokensFor(sources.root)
      const first = yield* startServer([sources.root])
      const before = apiOf(first.url, tokens.admin.token)
      const [same, changed] = [yield* before.submit("confirm, please"), yield* before.submit("confirm, please")]
      for (const runId of [same, changed]) yield* before.until("the approval", before.run(runId), (run) => run.status === "suspended")
      const startedOn = (yield* before.run(same)).release
      expect(startedOn).toMatch(/^dev-/)
      expect((yield* deploy(first.url, tokens.deploy.token, uploadOf(v2.folder))).status).toBe(200)
      yield* kill(first.server)

      // The sources are as they were: the build of them is the one the runs started on.
      const second = yield* startServer([sources.root])
      expect(second.server.output()).toContain(`release: ${v2.id}`)
      const again = apiOf(second.url, tokens.admin.token)
      yield* again.approve(same)
      expect(yield* again.ended(same)).toMatchObject({ status: "completed", output: "the tool said: v1 confirmed", release: startedOn })
      expect(second.server.output()).not.toContain("cannot load")
      yield* kill(second.server)

      // Nothing builds the runs' release any more: the other run goes on v2, and says so.
      yield* sources.update("v3")
      const third = yield* startServer([sources.root])
      const after = apiOf(third.url, tokens.admin.token)
      yield* after.approve(changed)
      expect(yield* after.ended(changed)).toMatchObject({ status: "completed", output: "the tool said: v2 confirmed", release: v2.id })
      expect(third.server.output()).toContain(`run ${changed} started on release ${startedOn}, which this server cannot load; it goes on the current release ${v2.id}`)
      expect(third.server.output()).toContain(`${startedOn} is a build of a project's sources, which no store keeps`)
    }), { timeout: 180_000 })
})
