/**
 * `foundry build` and `foundry start --release`: a release is the project's route files bundled
 * into a folder of plain JavaScript with `release.json`, named by the hash of what it holds, and
 * served by the `foundry` binary with nothing else: no sources, no `node_modules`, no tsx.
 */
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync, mkdirSync } from "node:fs"
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { collector } from "../events/otlpCollector.js"
import { freePort, runCli, startCli } from "../support/cli.js"
import { http, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const repository = fileURLToPath(new URL("../../", import.meta.url))
const version = (JSON.parse(readFileSync(join(repository, "package.json"), "utf8")) as { readonly version: string }).version

const helper = (unit: string) => `import pgTypes from "pg-types"

/** Adds up a PostgreSQL int[] as the database sends it (pg-types is a CommonJS package). */
export const total = (array: string): string => {
  const values: unknown = pgTypes.getTypeParser(1007)(array)
  return \`${unit} \${Array.isArray(values) ? values.reduce((sum: number, value) => sum + Number(value), 0) : 0}\`
}
`

/** An agent whose tool imports a helper (which imports an npm package), and a schedule that imports the agent. */
const files = {
  "agents/shop/lib/sum.ts": helper("total"),
  "agents/shop/tools/total.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
import { total } from "../lib/sum.js"

export default defineTool({
  description: "Adds up a PostgreSQL int array",
  input: Schema.Struct({ values: Schema.String }),
  output: Schema.String,
  run: ({ values }) => Effect.succeed(total(values))
})
`,
  "agents/shop/agent.ts": `import { defineAgent, Scripted } from "foundry"
import total from "./tools/total.tool.js"

export default defineAgent({
  description: "Adds numbers",
  model: Scripted.make((_request, index) =>
    index === 0 ? { toolCalls: [{ name: "total", arguments: { values: "{1,2,3}" } }] } : { text: "added up" }),
  tools: [total]
})
`,
  "schedules/nightly.ts": `import { defineSchedule } from "foundry"
import shop from "../agents/shop/agent.js"

export default defineSchedule({ cron: "0 3 * * *", agent: shop, instance: "default", message: "Add up today's numbers." })
`,
  "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ concurrency: 4 })\n`
}

/** The project, with `pg-types` installed (linked from this checkout, as a package manager might). */
const project = Effect.gen(function*() {
  const root = yield* tempProject(files)
  mkdirSync(join(root, "node_modules"))
  symlinkSync(join(repository, "node_modules/pg-types"), join(root, "node_modules/pg-types"), "dir")
  return root
})

/** A new empty folder outside the repository and the project, removed afterwards. */
const emptyFolder = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "foundry-release-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/** `foundry build <root>`, expected to succeed: the release id and folder it printed. */
const build = (root: string, flags: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const result = yield* runCli(["build", root, ...flags])
    if (result.code !== 0) throw new Error(`foundry build failed (exit ${result.code}):\n${result.stdout}${result.stderr}`)
    const id = /release (rel_[0-9a-f]{12})/.exec(result.stdout)?.[1]
    if (id === undefined) throw new Error(`no release id in:\n${result.stdout}`)
    return { id, folder: join(root, ".foundry/releases", id), result }
  })

/** Every file below `folder`, relative, sorted. */
const filesBelow = (folder: string): ReadonlyArray<string> =>
  readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(folder, join(entry.parentPath, entry.name)))
    .sort()

interface ReleaseJson {
  readonly id: string
  readonly createdAt: string
  readonly foundryVersion: string
  readonly manifest: { readonly routes: ReadonlyArray<{ readonly kind: string; readonly id: string }> }
  readonly migrations: ReadonlyArray<string>
  readonly files: ReadonlyArray<string>
}

const releaseJson = (folder: string): ReleaseJson => JSON.parse(readFileSync(join(folder, "release.json"), "utf8")) as ReleaseJson

describe("foundry build", () => {
  it.scopedLive("gives a rel_ id that stays the same for unchanged sources and changes after an edit", () =>
    Effect.gen(function*() {
      const root = yield* project
      const first = yield* build(root)
      expect(first.result.stdout).toContain("routes:  1 agent, 1 tool, 0 MCP servers, 1 schedule, 0 playbooks, 0 environments")
      expect(first.result.stdout).toContain(`foundry start --release ${first.folder}`)

      const release = releaseJson(first.folder)
      expect(release.id).toBe(first.id)
      expect(release.foundryVersion).toBe(version)
      expect(release.migrations[0]).toBe("0001_init")
      expect(release.manifest.routes.map((r) => `${r.kind}:${r.id}`).sort()).toEqual(["agent:shop", "schedule:nightly", "tool:shop/total"])
      // Plain JavaScript at the route files' own paths, plus shared chunks: nothing else.
      expect(release.files).toEqual(filesBelow(first.folder).filter((file) => file !== "release.json"))
      expect(release.files).toEqual(expect.arrayContaining([
        "agents/shop/agent.js",
        "agents/shop/tools/total.tool.js",
        "foundry.config.js",
        "schedules/nightly.js"
      ]))
      expect(release.files.every((file) => file.endsWith(".js"))).toBe(true)
      // The agent the schedule imports is one module, shared by both entries.
      const defining = release.files.filter((file) => readFileSync(join(first.folder, file), "utf8").includes("defineAgent({"))
      expect(defining).toHaveLength(1)
      expect(defining[0]).toMatch(/^_chunks\//)

      const again = yield* build(root)
      expect(again.id).toBe(first.id)
      expect(again.result.stdout).toContain("already built")
      expect(releaseJson(again.folder).createdAt).toBe(release.createdAt)

      writeFileSync(join(root, "agents/shop/lib/sum.ts"), helper("sum"))
      const edited = yield* build(root)
      expect(edited.id).toMatch(/^rel_[0-9a-f]{12}$/)
      expect(edited.id).not.toBe(first.id)
      expect(existsSync(first.folder)).toBe(true)
    }), { timeout: 120_000 })

  it.scopedLive("builds a release folder changed since its build again, as the refusal to start it says to", () =>
    Effect.gen(function*() {
      const root = yield* project
      const { folder, id } = yield* build(root)
      const listed = join(folder, "agents/shop/agent.js")
      const original = readFileSync(listed, "utf8")
      writeFileSync(listed, `${original}\n// edited after the build\n`)
      mkdirSync(join(folder, "agents/stray"))
      writeFileSync(join(folder, "agents/stray/agent.js"), readFileSync(listed, "utf8"))
      const refused = yield* runCli(["start", "--release", folder, "--port", String(yield* freePort)])
      expect(refused.code).toBe(1)
      expect(refused.stderr).toContain("agents/stray/agent.js")

      const again = yield* build(root)
      expect(again.id).toBe(id)
      expect(again.result.stdout).not.toContain("already built")
      expect(again.result.stderr).toContain("the release folder was written again, as it had changed since its build")
      expect(readFileSync(listed, "utf8")).toBe(original)
      expect(existsSync(join(folder, "agents/stray/agent.js"))).toBe(false)

      const server = yield* startCli(["start", "--release", folder, "--port", String(yield* freePort)], { cwd: folder })
      yield* server.waitFor(/listening on/)
      expect(server.output()).toContain(`release: ${id}`)
    }), { timeout: 120_000 })

  it.scopedLive("refuses a project with a type error, printing it, and writes no release", () =>
    Effect.gen(function*() {
      const root = yield* project
      writeFileSync(join(root, "agents/shop/lib/sum.ts"), `${helper("total")}\nexport const broken: number = "not a number"\n`)
      const result = yield* runCli(["build", root])
      expect(result.code).toBe(1)
      expect(result.stderr).toContain("agents/shop/lib/sum.ts")
      expect(result.stderr).toContain("TS2322")
      expect(result.stderr).toContain("no release was written")
      expect(result.stdout).not.toMatch(/release rel_/)
      expect(existsSync(join(root, ".foundry/releases"))).toBe(false)
    }), { timeout: 120_000 })
})

describe("foundry start --release", () => {
  it.scopedLive("serves a release copied alone to an empty folder: a run completes, and its events and spans carry the release", () =>
    Effect.gen(function*() {
      const root = yield* project
      const { folder, id } = yield* build(root)
      const copy = join(yield* emptyFolder, "app")
      cpSync(folder, copy, { recursive: true })
      rmSync(root, { recursive: true, force: true })

      const otlp = yield* collector()
      const versions = () => otlp.requests.flatMap((request) => request.resources.map((resource) => resource["service.version"] ?? "(none)"))
      const port = yield* freePort
      const server = yield* startCli(["start", "--release", copy, "--port", String(port)], {
        cwd: copy,
        env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url }
      })
      yield* server.waitFor(/listening on/)
      expect(server.output()).toContain(`release: ${id}`)
      expect(server.output()).toContain(`store:   ${join(copy, ".foundry/foundry.db")}`)

      const url = `http://127.0.0.1:${port}`
      const created = yield* http(`${url}/api/runs`, { body: { agent: "shop", message: "add them up" } })
      expect(created.status).toBe(202)
      const runId = (created.json as { readonly runId: string }).runId
      const run = yield* waitForRun(url, runId)
      expect(run.status).toBe("completed")
      expect(run.output).toBe("added up")

      const events = ((yield* http(`${url}/api/events?runId=${runId}`)).json as {
        readonly events: ReadonlyArray<{ readonly type: string; readonly release: string; readonly data: { readonly output?: unknown } }>
      }).events
      expect(events.find((e) => e.type === "tool.call.completed")?.data.output).toBe("total 6")
      expect(events.length).toBeGreaterThan(3)
      expect(new Set(events.map((e) => e.release))).toEqual(new Set([id]))
      for (let attempt = 0; attempt < 100 && versions().length === 0; attempt++) yield* Effect.sleep("50 millis")
      expect(versions().length).toBeGreaterThan(0)
      expect(new Set(versions())).toEqual(new Set([id]))

      const schedules = (yield* http(`${url}/api/schedules`)).json
      expect(JSON.stringify(schedules)).toContain("nightly")
    }), { timeout: 120_000 })

  it.scopedLive("carries the folder an environment starts from: a release copied alone reads its files", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "environments/desk.ts": `import { defineEnvironment } from "foundry"\nexport default defineEnvironment({ backend: { directory: "data" } })\n`,
        "data/inbox/rates.md": "rates: 3%\n",
        "data/.notes/keep.txt": "a file whose folder starts with a dot\n",
        "agents/reader/agent.ts": `import { defineAgent, Scripted } from "foundry"
import desk from "../../environments/desk.js"

export default defineAgent({
  description: "Reads what its environment starts with",
  environment: desk,
  model: Scripted.make((request, index) => {
    if (index === 0) return { toolCalls: [{ name: "read_file", arguments: { path: "/inbox/rates.md" } }] }
    if (index === 1) return { toolCalls: [{ name: "read_file", arguments: { path: "/.notes/keep.txt" } }] }
    return { text: request.messages.filter((m) => m._tag === "tool").map((m) => m.content).join(" | ") }
  })
})
`
      })
      const { folder } = yield* build(root)
      expect(releaseJson(folder).files).toEqual(expect.arrayContaining(["data/inbox/rates.md", "data/.notes/keep.txt"]))
      const copy = join(yield* emptyFolder, "app")
      cpSync(folder, copy, { recursive: true })
      rmSync(root, { recursive: true, force: true })

      const port = yield* freePort
      const server = yield* startCli(["start", "--release", copy, "--port", String(port)], { cwd: copy })
      yield* server.waitFor(/listening on/)
      const url = `http://127.0.0.1:${port}`
      const created = yield* http(`${url}/api/runs`, { body: { agent: "reader", message: "read it" } })
      const run = yield* waitForRun(url, (created.json as { readonly runId: string }).runId)
      expect(run.status).toBe("completed")
      expect(run.output).toContain("rates: 3%")
      expect(run.output).toContain("a file whose folder starts with a dot")
    }), { timeout: 120_000 })

  it.scopedLive("refuses an environment whose folder is missing, or outside the project, naming the file", () =>
    Effect.gen(function*() {
      const environment = (directory: string) =>
        `import { defineEnvironment } from "foundry"\nexport default defineEnvironment({ backend: { directory: ${JSON.stringify(directory)} } })\n`
      const missing = yield* tempProject({ "environments/desk.ts": environment("data") })
      const refused = yield* runCli(["build", missing])
      expect(refused.code).toBe(1)
      expect(refused.stderr).toContain("environments/desk.ts")
      expect(refused.stderr).toContain(`backend.directory "data" is not a folder (${join(missing, "data")} does not exist)`)

      const shared = `../foundry-shared-${randomUUID()}`
      const outside = yield* tempProject({ "environments/desk.ts": environment(shared) })
      mkdirSync(join(outside, shared))
      const carried = yield* runCli(["build", outside])
      rmSync(join(outside, shared), { recursive: true, force: true })
      expect(carried.code).toBe(1)
      expect(carried.stderr).toContain(`environments/desk.ts: backend.directory "${shared}" is outside the project folder`)
      expect(carried.stderr).toContain("fix: move the folder into the project, or give an absolute path that the server has")
    }), { timeout: 120_000 })

  it.scopedLive("refuses a release copied over an older one that leaves route files it does not list, and an edited one started without --release", () =>
    Effect.gen(function*() {
      const root = yield* project
      mkdirSync(join(root, "agents/old"))
      writeFileSync(join(root, "agents/old/agent.ts"), `import { defineAgent, Scripted } from "foundry"
export default defineAgent({ description: "Removed in the next release", model: Scripted.make(() => ({ text: "still here" })) })
`)
      const older = yield* build(root)
      rmSync(join(root, "agents/old"), { recursive: true, force: true })
      const newer = yield* build(root)
      const app = join(yield* emptyFolder, "app")
      cpSync(older.folder, app, { recursive: true })
      // As `cp -r rel_new/. /srv/app` deploys it: the older release's agent stays.
      cpSync(newer.folder, app, { recursive: true })
      expect(existsSync(join(app, "agents/old/agent.js"))).toBe(true)

      /** `foundry start` on the folder: its output once it listens or stops. */
      const start = (flags: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const server = yield* startCli(["start", ...flags, app, "--port", String(yield* freePort)], { cwd: app })
          yield* server.waitFor(/listening on|fix: /)
          return server.output()
        })
      const leftover = yield* start(["--release"])
      expect(leftover).not.toContain("listening on")
      expect(leftover).toContain(`holds route files that release ${newer.id} does not have`)
      expect(leftover).toContain("agents/old/agent.js")
      expect(leftover).toContain("copy the release into an empty folder")

      rmSync(join(app, "agents/old"), { recursive: true, force: true })
      writeFileSync(join(app, "agents/shop/agent.js"), `${readFileSync(join(app, "agents/shop/agent.js"), "utf8")}\n// edited after the build\n`)
      const edited = yield* start([])
      expect(edited).not.toContain("listening on")
      expect(edited).toContain("changed after it was built")
    }), { timeout: 120_000 })

  it.scopedLive("refuses a folder that is not a release", () =>
    Effect.gen(function*() {
      const root = yield* project
      const result = yield* runCli(["start", "--release", root, "--port", String(yield* freePort)])
      expect(result.code).toBe(1)
      expect(result.stderr).toContain("is not a release: it has no release.json")
      expect(result.stderr).toContain("foundry build")
    }))
})

describe("foundry build --docker", () => {
  it.scopedLive("writes a Dockerfile that installs the packed framework and starts the release, and a compose.yaml with PostgreSQL", () =>
    Effect.gen(function*() {
      const root = yield* project
      const { folder, id, result } = yield* build(root, ["--docker"])
      const tarball = join(folder, `foundry-${version}.tgz`)
      expect(readFileSync(tarball).subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]))

      const dockerfile = readFileSync(join(folder, "Dockerfile"), "utf8")
      expect(dockerfile).toContain(`# Release ${id}`)
      expect(dockerfile).toMatch(/^FROM node:20-slim$/m)
      expect(dockerfile).toContain(`COPY foundry-${version}.tgz /opt/foundry/`)
      expect(dockerfile).toContain(`RUN npm install --global --omit=dev /opt/foundry/foundry-${version}.tgz`)
      expect(dockerfile).toMatch(/^COPY --chown=node:node \. \/app$/m)
      expect(dockerfile).toMatch(/^ENV NODE_OPTIONS=--v8-pool-size=0$/m)
      expect(dockerfile).toContain(`CMD ["foundry", "start", "--release", "/app", "--host", "0.0.0.0", "--port", "4141"]`)
      expect(dockerfile).toContain("foundry token create --scope admin --dir /app")
      expect(readFileSync(join(folder, ".dockerignore"), "utf8")).toBe(".foundry/\n")

      const compose = readFileSync(join(folder, "compose.yaml"), "utf8")
      expect(compose).toMatch(/^ {4}image: postgres:16$/m)
      expect(compose).toMatch(/^ {6}DATABASE_URL: postgres:\/\/foundry:foundry@db:5432\/foundry$/m)
      expect(compose).toContain(`command: ["foundry", "start", "--release", "/app", "--host", "0.0.0.0", "--port", "4141", "--cluster"]`)
      expect(compose).toMatch(/^ {4}build: \.$/m)
      expect(compose).toContain("condition: service_healthy")
      expect(compose).toContain(`store: { postgres: Config.redacted("DATABASE_URL") }`)
      // The config keeps runs in SQLite: the build says compose.yaml's PostgreSQL would not be used.
      expect(result.stderr).toContain("keeps runs in SQLite")

      // The container files are beside the release, not part of it.
      expect(releaseJson(folder).files).not.toContain("Dockerfile")
    }), { timeout: 120_000 })
})
