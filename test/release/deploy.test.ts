/**
 * Deploying to a running `foundry start` server through `/api/releases`: new runs switch to the
 * release at once while runs in flight finish on the release they started on (its layers open
 * until they end), each run's events carry its release, a rollback switches back, and changing
 * releases needs a `deploy` token; a release that is not intact or does not load switches nothing.
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { releaseIdOf } from "../../src/release/contentHash.js"
import { bearer } from "../auth/support.js"
import { freePort, startCli } from "../support/cli.js"
import { http } from "../support/server.js"
import { lazyProject } from "../support/lazyProject.js"
import { tempProject } from "../support/tempProject.js"
import { apiOf, build, deploy, deskReleases, deskSources, emptyServerProject, logLines, startServer, tokensFor, uploadOf } from "./deploySupport.js"

interface SwitchJson {
  readonly id: string
  readonly switched: boolean
  readonly current: string
  readonly summary: Record<"agents" | "tools", { readonly added: ReadonlyArray<string>; readonly removed: ReadonlyArray<string>; readonly changed: ReadonlyArray<string> }> & {
    readonly config: boolean
  }
}

interface ReleaseJson {
  readonly id: string
  readonly current: boolean
  readonly runs: number
  readonly deployedBy: string | null
  readonly summary: SwitchJson["summary"]
}

const layerLog = () => join(tmpdir(), `foundry-deploy-${randomUUID()}.log`)

/** A folder of its own for a server, removed afterwards. */
const serverFolder = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "foundry-deploy-server-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

describe("deploy", () => {
  it.scopedLive("a run in flight finishes on the release it started on, new runs start on the one deployed, and events carry each run's release", () =>
    Effect.gen(function*() {
      const { v1, v2 } = yield* deskReleases
      const root = yield* emptyServerProject
      const tokens = yield* tokensFor(root)
      const log = layerLog()
      const { url } = yield* startServer([root], { DESK_LAYER_LOG: log })
      const api = apiOf(url, tokens.admin.token)

      const first = yield* deploy(url, tokens.deploy.token, uploadOf(v1.folder))
      expect(first.status).toBe(200)
      const firstSwitch = first.json as SwitchJson
      expect(firstSwitch).toMatchObject({ id: v1.id, switched: true, current: v1.id })
      expect(firstSwitch.summary.agents).toEqual({ added: ["desk"], removed: [], changed: [] })
      expect(firstSwitch.summary.tools).toEqual({ added: ["desk/answer", "desk/confirm"], removed: [], changed: [] })

      const slow = yield* api.submit("slow, please")
      yield* api.until("the slow run's tool call", api.events(slow), (events) => events.some((e) => e.type === "tool.call.started"))

      const second = yield* deploy(url, tokens.deploy.token, uploadOf(v2.folder))
      expect(second.status).toBe(200)
      const secondSwitch = second.json as SwitchJson
      expect(secondSwitch).toMatchObject({ id: v2.id, switched: true, current: v2.id })
      expect(secondSwitch.summary.tools).toEqual({ added: [], removed: [], changed: ["desk/answer", "desk/confirm"] })
      // v2's config opens another layer.
      expect(secondSwitch.summary.config).toBe(true)
      // The slow run was in flight when v2 became current: v1's layer is still open.
      expect((yield* api.run(slow)).status).toBe("running")
      expect(logLines(log)).toEqual(["open v1", "open v2"])

      const fast = yield* api.submit("now")
      const fastRun = yield* api.ended(fast)
      expect(fastRun).toMatchObject({ status: "completed", output: "the tool said: v2", release: v2.id })
      const slowRun = yield* api.ended(slow)
      expect(slowRun).toMatchObject({ status: "completed", output: "the tool said: v1", release: v1.id })

      const slowEvents = yield* api.events(slow)
      expect(slowEvents.find((e) => e.type === "tool.call.completed")?.data.output).toBe("v1")
      expect(slowEvents.map((e) => e.type)).toContain("run.completed")
      expect(new Set(slowEvents.map((e) => e.release))).toEqual(new Set([v1.id]))
      const fastEvents = yield* api.events(fast)
      expect(fastEvents.find((e) => e.type === "tool.call.completed")?.data.output).toBe("v2")
      expect(new Set(fastEvents.map((e) => e.release))).toEqual(new Set([v2.id]))

      // v1's last run has ended: its layer closes; v2's, current, stays open.
      yield* api.until("v1's layer to close", Effect.sync(() => logLines(log)), (lines) => lines.includes("close v1"))
      expect(logLines(log)).toEqual(["open v1", "open v2", "close v1"])

      const listed = yield* http(`${url}/api/releases`, { headers: bearer(tokens.read.token) })
      expect(listed.status).toBe(200)
      const releases = listed.json as ReadonlyArray<ReleaseJson>
      expect(releases.map((r) => [r.id, r.current, r.runs, r.deployedBy])).toEqual([
        [v2.id, true, 1, tokens.deploy.id],
        [v1.id, false, 1, tokens.deploy.id]
      ])
      expect(releases[0]?.summary.tools.changed).toEqual(["desk/answer", "desk/confirm"])
    }), { timeout: 120_000 })

  it.scopedLive("a run suspended on an approval when the next release is deployed resumes on its own release once approved", () =>
    Effect.gen(function*() {
      const { v1, v2 } = yield* deskReleases
      const root = yield* emptyServerProject
      const tokens = yield* tokensFor(root)
      const log = layerLog()
      const { url } = yield* startServer([root], { DESK_LAYER_LOG: log })
      const api = apiOf(url, tokens.admin.token)
      expect((yield* deploy(url, tokens.deploy.token, uploadOf(v1.folder))).status).toBe(200)
      const waiting = yield* api.submit("confirm, please")
      yield* api.until("the approval", api.run(waiting), (run) => run.status === "suspended")
      expect((yield* deploy(url, tokens.deploy.token, uploadOf(v2.folder))).status).toBe(200)
      // Nothing executes on v1 while its only run waits for a person: its layer is let go.
      yield* api.until("v1's layer to close", Effect.sync(() => logLines(log)), (lines) => lines.includes("close v1"))

      const pending = yield* http(`${url}/api/approvals?status=pending`, { headers: bearer(tokens.admin.token) })
      const approval = (pending.json as ReadonlyArray<{ readonly id: string; readonly runId: string }>).find((a) => a.runId === waiting)
      expect(approval).toBeDefined()
      yield* http(`${url}/api/approvals/${approval?.id}`, { body: { decision: "approve" }, headers: bearer(tokens.admin.token) })
      const resumed = yield* api.ended(waiting)
      expect(resumed).toMatchObject({ status: "completed", output: "the tool said: v1 confirmed", release: v1.id })
      const events = yield* api.events(waiting)
      expect(events.map((e) => e.type)).toContain("run.resumed")
      expect(new Set(events.map((e) => e.release))).toEqual(new Set([v1.id]))
      // Loaded again for the run to go on, and let go once it ended.
      yield* api.until("v1's layer to close again", Effect.sync(() => logLines(log)), (lines) => lines.filter((l) => l === "close v1").length === 2)
      expect(logLines(log)).toEqual(["open v1", "open v2", "close v1", "open v1", "close v1"])
    }), { timeout: 120_000 })

  it.scopedLive("a run started on the sources a server started from resumes on them after a deploy, though the sources changed since", () =>
    Effect.gen(function*() {
      const { v2 } = yield* deskReleases
      const sources = yield* deskSources("v1")
      const tokens = yield* tokensFor(sources.root)
      const { url } = yield* startServer([sources.root])
      const api = apiOf(url, tokens.admin.token)
      const waiting = yield* api.submit("confirm, please")
      yield* api.until("the approval", api.run(waiting), (run) => run.status === "suspended")
      const startedOn = (yield* api.run(waiting)).release
      expect(startedOn).toMatch(/^dev-/)
      // Nothing could build the run's release again: its sources are v2's now, and v2 is deployed.
      yield* sources.update("v2")
      expect((yield* deploy(url, tokens.deploy.token, uploadOf(v2.folder))).status).toBe(200)

      const pending = yield* http(`${url}/api/approvals?status=pending`, { headers: bearer(tokens.admin.token) })
      const approval = (pending.json as ReadonlyArray<{ readonly id: string; readonly runId: string }>).find((a) => a.runId === waiting)
      yield* http(`${url}/api/approvals/${approval?.id}`, { body: { decision: "approve" }, headers: bearer(tokens.admin.token) })
      expect(yield* api.ended(waiting)).toMatchObject({ status: "completed", output: "the tool said: v1 confirmed", release: startedOn })
      expect(new Set((yield* api.events(waiting)).map((e) => e.release))).toEqual(new Set([startedOn]))
      // New runs start on the release deployed.
      expect(yield* api.ended(yield* api.submit("hello"))).toMatchObject({ output: "the tool said: v2", release: v2.id })
    }), { timeout: 120_000 })

  it.scopedLive("a rollback makes an earlier release current again: new runs start on it; `--release` made the first one current, and does not undo a later deploy on a restart", () =>
    Effect.gen(function*() {
      const { v1, v2 } = yield* deskReleases
      // v1 alone in a folder of its own, as a server would have it; its store is inside.
      const app = join(yield* serverFolder, "app")
      cpSync(v1.folder, app, { recursive: true })
      const tokens = yield* tokensFor(app)
      const first = yield* startServer(["--release", app])
      expect(first.server.output()).toContain(`release: ${v1.id}`)
      const firstApi = apiOf(first.url, tokens.admin.token)
      expect((yield* http(`${first.url}/api/releases`, { headers: bearer(tokens.read.token) })).json).toMatchObject([{ id: v1.id, current: true, deployedBy: "start" }])
      expect((yield* deploy(first.url, tokens.deploy.token, uploadOf(v2.folder))).status).toBe(200)
      expect(yield* firstApi.ended(yield* firstApi.submit("which one?"))).toMatchObject({ output: "the tool said: v2", release: v2.id })

      // Started again on v1's folder (a container restarted on its image): the deploy since stands.
      first.server.child.kill("SIGTERM")
      yield* Effect.async<void>((resume) => {
        if (first.server.child.exitCode !== null || first.server.child.signalCode !== null) resume(Effect.void)
        else first.server.child.once("exit", () => resume(Effect.void))
      })
      const { server, url } = yield* startServer(["--release", app])
      expect(server.output()).toContain(`release: ${v2.id}`)
      expect(server.output()).toContain(`--release ${v1.id} was current before, and ${v2.id} was deployed since`)
      expect(server.output()).toContain(`foundry rollback ${v1.id}`)
      const api = apiOf(url, tokens.admin.token)
      const list = Effect.map(http(`${url}/api/releases`, { headers: bearer(tokens.read.token) }), (r) => r.json as ReadonlyArray<ReleaseJson>)

      const rollback = yield* http(`${url}/api/releases/${v1.id}/activate`, { method: "POST", headers: bearer(tokens.deploy.token) })
      expect(rollback.status).toBe(200)
      const back = rollback.json as SwitchJson
      expect(back).toMatchObject({ id: v1.id, switched: true, current: v1.id })
      expect(back.summary.tools).toEqual({ added: [], removed: [], changed: ["desk/answer", "desk/confirm"] })
      expect(yield* api.ended(yield* api.submit("which one now?"))).toMatchObject({ output: "the tool said: v1", release: v1.id })

      const again = yield* http(`${url}/api/releases/${v1.id}/activate`, { method: "POST", headers: bearer(tokens.deploy.token) })
      expect(again.json).toMatchObject({ id: v1.id, switched: false, current: v1.id, summary: { config: false, tools: { changed: [] } } })
      const unknown = yield* http(`${url}/api/releases/rel_000000000000/activate`, { method: "POST", headers: bearer(tokens.deploy.token) })
      expect(unknown.status).toBe(404)
      expect(unknown.json).toMatchObject({ _tag: "ReleaseNotFound", message: expect.stringContaining("GET /api/releases") })

      expect((yield* list).map((r) => [r.id, r.current, r.runs, r.deployedBy])).toEqual([
        [v1.id, true, 1, tokens.deploy.id],
        [v2.id, false, 1, tokens.deploy.id]
      ])
    }), { timeout: 120_000 })

  it.scopedLive("changing releases needs a deploy token; a dry run, a tampered upload and a release that does not load switch nothing", () =>
    Effect.gen(function*() {
      const { v1, v2 } = yield* deskReleases
      const root = yield* emptyServerProject
      const tokens = yield* tokensFor(root)
      const { url } = yield* startServer([root], { DESK_REFUSE: "v2" })
      const upload = uploadOf(v1.folder)
      const current = Effect.map(http(`${url}/api/releases`, { headers: bearer(tokens.read.token) }), (r) => r.json as ReadonlyArray<ReleaseJson>)

      expect((yield* http(`${url}/api/releases`, { body: upload })).status).toBe(401)
      for (const token of [tokens.run, tokens.read]) {
        const refused = yield* deploy(url, token.token, upload)
        expect(refused.status).toBe(403)
        expect(refused.json).toMatchObject({ _tag: "Forbidden", required: "deploy", scope: token === tokens.run ? "run" : "read" })
      }
      const activate = yield* http(`${url}/api/releases/${v1.id}/activate`, { method: "POST", headers: bearer(tokens.run.token) })
      expect(activate.status).toBe(403)

      const dry = yield* deploy(url, tokens.admin.token, upload, { dryRun: true })
      expect(dry.status).toBe(200)
      expect(dry.json).toMatchObject({ id: v1.id, switched: false })
      expect((dry.json as SwitchJson).current).toMatch(/^dev-/)
      expect((dry.json as SwitchJson).summary.agents.added).toEqual(["desk"])
      expect(yield* current).toEqual([])
      expect(dry.json).not.toHaveProperty("restartNeeded")
      // Never deployed, so not kept in the server's release cache either.
      const cached = (id: string) => existsSync(join(root, ".foundry/release-cache", id))
      expect(cached(v1.id)).toBe(false)

      // A config that changes what the server read as it started says that a restart applies it.
      const larger = yield* deskSources("v3")
      const config = join(larger.root, "foundry.config.ts")
      writeFileSync(config, readFileSync(config, "utf8").replace("auth: { required: true },", "auth: { required: true },\n  server: { bodyLimit: 2_000_000 },"))
      const v3 = yield* build(larger.root)
      const restart = yield* deploy(url, tokens.admin.token, uploadOf(v3.folder), { dryRun: true })
      // Read from the config of the folder the server started on, whatever release it serves: a restart alone does not apply it.
      expect(restart.json).toMatchObject({
        switched: false,
        restartNeeded: `its config changes server.bodyLimit, which this server read as it started, from ${join(root, "foundry.config.ts")} ` +
          "(the folder it was started on), not from a release deployed to it: a restart reads them from there again. To apply the change, " +
          "make it there, or start the server on this release's folder with `foundry start --release <folder>`"
      })
      expect(cached(v3.id)).toBe(false)

      const [file] = Object.keys(upload.files)
      const tampered = yield* deploy(url, tokens.deploy.token, {
        ...upload,
        files: { ...upload.files, [file ?? ""]: Buffer.from("export default 1\n").toString("base64") }
      })
      expect(tampered.status).toBe(400)
      expect(tampered.json).toMatchObject({ _tag: "ReleaseInvalid", message: expect.stringContaining(`not to the release's id ${v1.id}`) })
      // Paths out of the release's folder, or into its own state, are refused before anything is hashed.
      for (const path of ["../escape.js", ".foundry/foundry.db", "agents/./x.js"]) {
        const manifest = { ...upload.manifest, files: [...Object.keys(upload.files), path] }
        const unsafe = yield* deploy(url, tokens.deploy.token, { ...upload, manifest, files: { ...upload.files, [path]: "" } })
        expect(unsafe.status).toBe(400)
        expect(unsafe.json).toMatchObject({ _tag: "ReleaseInvalid", message: `files with paths a release cannot have: ${path}` })
      }
      // Paths no folder can hold, with an id that matches them: refused, not a write that fails halfway (a 500).
      for (const [paths, reason] of [
        [["notes/a", "notes/a/b"], "files whose paths are also folders of other files: notes/a"],
        [[`notes/${"n".repeat(256)}`], "files with a name over 255 bytes"]
      ] as const) {
        const files = { ...upload.files, ...Object.fromEntries(paths.map((path) => [path, ""])) }
        const id = releaseIdOf(Object.keys(files).sort().map((file) => ({ file, content: Buffer.from(files[file] ?? "", "base64") })))
        const unwritable = yield* deploy(url, tokens.deploy.token, { ...upload, manifest: { ...upload.manifest, id, files: Object.keys(files) }, files })
        expect(unwritable.status).toBe(400)
        expect(unwritable.json).toMatchObject({ _tag: "ReleaseInvalid", message: expect.stringContaining(reason) })
      }
      const incomplete = yield* deploy(url, tokens.deploy.token, { ...upload, files: {} })
      expect(incomplete.status).toBe(400)
      expect(incomplete.text).toContain("files missing that release.json lists")

      // This server's environment keeps v2's layer from opening.
      const broken = yield* deploy(url, tokens.deploy.token, uploadOf(v2.folder))
      expect(broken.status).toBe(400)
      expect(broken.json).toMatchObject({ _tag: "ReleaseInvalid", message: expect.stringContaining(`${v2.id} does not load`) })
      expect(yield* current).toEqual([])
      expect(cached(v2.id)).toBe(false)

      expect((yield* deploy(url, tokens.deploy.token, upload)).json).toMatchObject({ id: v1.id, switched: true })
      expect((yield* current).map((r) => [r.id, r.current])).toEqual([[v1.id, true]])
      expect(cached(v1.id)).toBe(true)
    }), { timeout: 120_000 })

  it.scopedLive("a release deployed after a dry run of it loads the code its routes import lazily", () =>
    Effect.gen(function*() {
      // esbuild splits a module imported with `await import()` into a chunk of its own, loaded when the tool runs.
      const lazy = yield* tempProject(lazyProject)
      const release = yield* build(lazy)
      const root = yield* emptyServerProject
      const tokens = yield* tokensFor(root)
      const { url } = yield* startServer([root])
      const upload = uploadOf(release.folder)

      const dry = yield* deploy(url, tokens.deploy.token, upload, { dryRun: true })
      expect(dry.json).toMatchObject({ id: release.id, switched: false })
      const deployed = yield* deploy(url, tokens.deploy.token, upload)
      expect(deployed.json).toMatchObject({ id: release.id, switched: true })

      const headers = bearer(tokens.admin.token)
      const created = yield* http(`${url}/api/runs`, { body: { agent: "lazy", message: "go" }, headers })
      expect(created.status).toBe(202)
      const runId = (created.json as { readonly runId: string }).runId
      const run = yield* apiOf(url, tokens.admin.token).ended(runId)
      expect(run).toMatchObject({ status: "completed", output: expect.stringContaining("from the heavy module") })
    }), { timeout: 120_000 })

  it.scopedLive("a deploy over a cached copy of the release that changed since it was written replaces it with the upload, and says so", () =>
    Effect.gen(function*() {
      const { v1 } = yield* deskReleases
      const root = yield* emptyServerProject
      const tokens = yield* tokensFor(root)
      // v1 in the server's release cache already, as an earlier process wrote it, and one of its files edited since.
      const cached = join(root, ".foundry/release-cache", v1.id)
      cpSync(v1.folder, cached, { recursive: true })
      const [edited] = (JSON.parse(readFileSync(join(cached, "release.json"), "utf8")) as { readonly files: ReadonlyArray<string> }).files
      if (edited === undefined) return yield* Effect.die(new Error("v1 lists no files"))
      writeFileSync(join(cached, edited), `${readFileSync(join(cached, edited), "utf8")}\n// edited after it was written\n`)
      const { server, url } = yield* startServer([root])
      expect((yield* deploy(url, tokens.deploy.token, uploadOf(v1.folder))).status).toBe(200)
      expect(readFileSync(join(cached, edited))).toEqual(readFileSync(join(v1.folder, edited)))
      expect(server.output()).toContain(`the release cache's copy of ${v1.id} is not that release`)
    }))

  it.scopedLive("foundry dev serves the sources and takes no deploys", () =>
    Effect.gen(function*() {
      const root = yield* emptyServerProject
      const tokens = yield* tokensFor(root)
      const port = yield* freePort
      const dev = yield* startCli(["dev", root, "--port", String(port)])
      yield* dev.waitFor(/listening on/)
      const refused = yield* deploy(`http://127.0.0.1:${port}`, tokens.deploy.token, { manifest: {}, files: {} })
      expect(refused.status).toBe(409)
      expect(refused.json).toMatchObject({ _tag: "ReleasesNotDeployable", message: expect.stringContaining("foundry start") })
    }), { timeout: 120_000 })
})
