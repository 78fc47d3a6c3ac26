/**
 * Shared pieces of the deploy tests: a project built into two releases (`v1` and `v2`, differing
 * in what their tool answers and in the layer their config opens), a release uploaded as
 * `foundry deploy` sends it, and a `foundry start` server that asks for tokens.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { DateTime, Effect, Schema } from "effect"
import { inject } from "vitest"
import { ReleaseManifest, releaseFile } from "../../src/release/ReleaseManifest.js"
import type { ReleaseStorage } from "../../src/release/ReleaseStorage.js"
import { summarize } from "../../src/release/releaseSummary.js"
import { freePort, runCli, startCli } from "../support/cli.js"
import { http } from "../support/server.js"
import { tempProject, writeFiles, writeProject } from "../support/tempProject.js"
import { bearer, issue } from "../auth/support.js"

const repository = fileURLToPath(new URL("../../", import.meta.url))

/**
 * An agent on a scripted model: it calls its tool (for 4 s when the message says "slow"; the one
 * that needs an approval when it says "confirm"), then says what the tool answered.
 */
const deskAgent = `import { defineAgent, Scripted } from "foundry"
import answer from "./tools/answer.tool.js"
import confirm from "./tools/confirm.tool.js"

export default defineAgent({
  description: "Answers with what its tool returns",
  tools: [answer, confirm],
  model: Scripted.make((request, index) => {
    if (index === 0) {
      const asked = request.messages.filter((m) => m._tag === "user").map((m) => m.content).pop() ?? ""
      return asked.includes("confirm")
        ? { toolCalls: [{ name: "confirm", arguments: {} }] }
        : { toolCalls: [{ name: "answer", arguments: { ms: asked.includes("slow") ? 4000 : 0 } }] }
    }
    const results = request.messages.filter((m) => m._tag === "tool")
    return { text: "the tool said: " + (results.length === 0 ? "nothing" : results[results.length - 1].content) }
  })
})
`

/** The tool of `version`: it answers the version after `ms`. */
const answerTool = (version: string) => `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Returns the answer of this release",
  input: Schema.Struct({ ms: Schema.Number }),
  output: Schema.String,
  run: ({ ms }) => Effect.as(Effect.sleep(ms), ${JSON.stringify(version)})
})
`

/** The tool of `version` that asks a person first: it answers the version, confirmed. */
const confirmTool = (version: string) => `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Returns the answer of this release once a person approves",
  input: Schema.Struct({}),
  output: Schema.String,
  approval: "always",
  run: () => Effect.succeed(${JSON.stringify(`${version} confirmed`)})
})
`

/**
 * The config of `version`: tokens required, and a layer that writes to $DESK_LAYER_LOG when it
 * opens and closes (and dies opening when $DESK_REFUSE names the version).
 */
const deskConfig = (version: string) => `/// <reference types="node" />
import { appendFileSync } from "node:fs"
import { Context, Effect, Layer } from "effect"
import { defineConfig } from "foundry"

class Desk extends Context.Tag("desk/Desk")<Desk, { readonly version: string }>() {}

const log = (line: string) =>
  Effect.sync(() => {
    const file = process.env.DESK_LAYER_LOG
    if (file !== undefined) appendFileSync(file, line + "\\n")
  })

export default defineConfig({
  auth: { required: true },
  layers: [
    Layer.scoped(
      Desk,
      process.env.DESK_REFUSE === "${version}"
        ? Effect.dieMessage("${version} cannot open its layer here")
        : Effect.as(Effect.acquireRelease(log("open ${version}"), () => log("close ${version}")), { version: "${version}" })
    )
  ]
})
`

/** A release `foundry build` wrote. */
export interface BuiltRelease {
  readonly id: string
  readonly folder: string
}

/** `foundry build <root>`: the release it printed. */
export const build = (root: string) =>
  Effect.gen(function*() {
    const result = yield* runCli(["build", root])
    const id = /release (rel_[0-9a-f]{12})/.exec(result.stdout)?.[1]
    if (result.code !== 0 || id === undefined) {
      return yield* Effect.die(new Error(`foundry build failed (exit ${result.code}):\n${result.stdout}${result.stderr}`))
    }
    return { id, folder: join(root, ".foundry/releases", id) } satisfies BuiltRelease
  })

/** The desk project's sources as of `version`. */
const deskFiles = (version: string) => ({
  "agents/desk/agent.ts": deskAgent,
  "agents/desk/tools/answer.tool.ts": answerTool(version),
  "agents/desk/tools/confirm.tool.ts": confirmTool(version),
  "foundry.config.ts": deskConfig(version)
})

/** The desk project's sources as of `version` in `root`, Node's types linked (the config's layer writes a file); `update` rewrites them as of another version. */
const deskIn = (root: string, version: string) => {
  writeProject(root, deskFiles(version))
  // Linked from this checkout as a package manager would install them.
  mkdirSync(join(root, "node_modules/@types"), { recursive: true })
  symlinkSync(join(repository, "node_modules/@types/node"), join(root, "node_modules/@types/node"), "dir")
  const update = (next: string) => Effect.sync(() => writeFiles(root, deskFiles(next)))
  return { root, update }
}

/** The desk project's sources as of `version`, in a folder of their own; `update` rewrites them as of another version. */
export const deskSources = (version: string) => Effect.map(tempProject({}), (root) => deskIn(root, version))

/** Both releases of the desk project, once built in this process. */
let built: { readonly v1: BuiltRelease; readonly v2: BuiltRelease } | undefined
const building = Effect.unsafeMakeSemaphore(1)

/**
 * The desk project built twice: `v1`, then `v2` (other tool answers and config layer). Built once
 * per test process, since each build type-checks and bundles for seconds: a release is a folder
 * the tests upload or copy, never one they write to. Its sources are in the run's shared folder,
 * which the run removes; a build that failed is tried again by the next test.
 */
export const deskReleases = building.withPermits(1)(Effect.suspend(() => {
  if (built !== undefined) return Effect.succeed(built)
  return Effect.gen(function*() {
    const { root, update } = deskIn(mkdtempSync(join(inject("sharedFolder"), "desk-")), "v1")
    const v1 = yield* build(root)
    yield* update("v2")
    const v2 = yield* build(root)
    built = { v1, v2 }
    return built
  })
}))

/** A release folder as `POST /api/releases` takes it: `release.json` as it is, and every file it lists in base64. */
export const uploadOf = (folder: string) => {
  const manifest = JSON.parse(readFileSync(join(folder, "release.json"), "utf8")) as { readonly files: ReadonlyArray<string> }
  const files = Object.fromEntries(manifest.files.map((file) => [file, readFileSync(join(folder, file)).toString("base64")]))
  return { manifest, files }
}

/** What `ReleaseStorage.activate` stores of the release built into `folder`. */
export const contentOf = (folder: string) => {
  const manifest = readFileSync(join(folder, releaseFile), "utf8")
  const createdAt = DateTime.toEpochMillis(Schema.decodeUnknownSync(Schema.parseJson(ReleaseManifest))(manifest).createdAt)
  return { createdAt, manifest, files: uploadOf(folder).files }
}

/** Makes release `id`, stored as `content`, the store's current one, as a deploy does. */
export const activateIn = (storage: ReleaseStorage["Type"], id: string, content: ReturnType<typeof contentOf>) =>
  storage.activate({ id, deployedAt: 1, action: "deploy", deployedBy: null, summary: summarize(undefined, new Map()), content })

/** A project with nothing in it but a config that asks for tokens: a server waiting for its first deploy. */
export const emptyServerProject = tempProject({
  "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ auth: { required: true } })\n`
})

/** Tokens of every scope, issued into the store of the server whose folder is `root`. */
export const tokensFor = (root: string) =>
  Effect.gen(function*() {
    const store = join(root, ".foundry/foundry.db")
    return {
      admin: yield* issue(store, "admin"),
      deploy: yield* issue(store, "deploy"),
      run: yield* issue(store, "run"),
      read: yield* issue(store, "read")
    }
  })

/** `foundry start <args>` on a free port, with `env` added to its environment, once it listens. */
export const startServer = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const server = yield* startCli(["start", ...args, "--port", String(port)], { env })
    yield* server.waitFor(/listening on/)
    return { server, url: `http://127.0.0.1:${port}` }
  })

/** A run as the API shows it. */
export interface RunJson {
  readonly id: string
  readonly status: string
  readonly output?: string
  readonly release?: string
}

/** An event as the API shows it. */
export interface EventJson {
  readonly type: string
  readonly release: string
  readonly data: { readonly output?: unknown }
}

/** The API of a server, with a token. */
export const apiOf = (url: string, token: string) => {
  const headers = bearer(token)
  const submit = (message: string) =>
    Effect.map(http(`${url}/api/runs`, { body: { agent: "desk", message }, headers }), (response) => {
      if (response.status !== 202) throw new Error(`POST /api/runs answered ${response.status}: ${response.text}`)
      return (response.json as { readonly runId: string }).runId
    })
  const run = (runId: string) => Effect.map(http(`${url}/api/runs/${runId}`, { headers }), (response) => response.json as RunJson)
  const events = (runId: string) =>
    Effect.map(http(`${url}/api/events?runId=${runId}`, { headers }), (response) => (response.json as { readonly events: ReadonlyArray<EventJson> }).events)
  /** Polls until `check` holds (or fails the test after 20 s). */
  const until = <A>(what: string, read: Effect.Effect<A>, check: (value: A) => boolean) =>
    Effect.gen(function*() {
      for (let attempt = 0; attempt < 400; attempt++) {
        const value = yield* read
        if (check(value)) return value
        yield* Effect.sleep("50 millis")
      }
      return yield* Effect.die(new Error(`timed out waiting for ${what}`))
    })
  const ended = (runId: string) =>
    until(`run ${runId} to end`, run(runId), (body) => ["completed", "failed", "cancelled"].includes(body.status))
  /** Approves the pending approval of a run suspended on one. */
  const approve = (runId: string) =>
    Effect.gen(function*() {
      const pending = yield* http(`${url}/api/approvals?status=pending`, { headers })
      const approval = (pending.json as ReadonlyArray<{ readonly id: string; readonly runId: string }>).find((a) => a.runId === runId)
      if (approval === undefined) return yield* Effect.die(new Error(`run ${runId} waits on no approval: ${pending.text}`))
      const decided = yield* http(`${url}/api/approvals/${approval.id}`, { body: { decision: "approve" }, headers })
      if (decided.status !== 200) return yield* Effect.die(new Error(`approving answered ${decided.status}: ${decided.text}`))
    })
  return { submit, run, events, until, ended, approve }
}

/** `POST /api/releases` of `upload` with `token` (a dry run when asked): the answer. */
export const deploy = (url: string, token: string, upload: object, options: { readonly dryRun?: boolean } = {}) =>
  http(`${url}/api/releases`, { body: { ...upload, ...(options.dryRun === true ? { dryRun: true } : {}) }, headers: bearer(token) })

/** The lines of a layer log so far. */
export const logLines = (file: string): ReadonlyArray<string> =>
  existsSync(file) ? readFileSync(file, "utf8").split("\n").filter((line) => line !== "") : []
