/**
 * The environment and artifact endpoints on a started server: a run's artifacts listed, downloaded
 * byte for byte as attachments and previewed (an XLSX as tables, an image, a text); an instance's
 * environment listed at its latest version, at an older one and at v0 (the starting files), a file
 * downloaded at a version; readable 404s; a read token suffices where tokens are required.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { attachment } from "../../src/transports/http/handlers/EnvironmentsLive.js"
import { bearer, issue } from "../auth/support.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { acmeScope, environmentProject, png, seedArtifacts, seedVersion, seedVersions, workbook } from "./support/seed.js"

const xlsxType = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

const isRunCreated = (body: unknown): body is { readonly runId: string; readonly conversationId: string } =>
  typeof body === "object" && body !== null && "runId" in body && typeof body.runId === "string" &&
  "conversationId" in body && typeof body.conversationId === "string"

interface Listed {
  readonly artifacts: ReadonlyArray<{ readonly id: string; readonly url: string; readonly path: string }>
}

const isListed = (body: unknown): body is Listed =>
  typeof body === "object" && body !== null && "artifacts" in body && Array.isArray(body.artifacts)

interface Sheet {
  readonly name: string
  readonly rows: ReadonlyArray<ReadonlyArray<string>>
}

const sheetsOf = (body: unknown): ReadonlyArray<Sheet> =>
  typeof body === "object" && body !== null && "sheets" in body && Array.isArray(body.sheets) ? body.sheets : []

/** The raw bytes of a GET, with its status and headers. */
const download = (url: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, { headers })
    return { status: response.status, headers: response.headers, bytes: new Uint8Array(await response.arrayBuffer()) }
  })

/** A run of `echo` (any run will do: artifacts name theirs); waited for unless it needs a token (`waitForRun` sends none). */
const aRun = (url: string, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const created = yield* http(`${url}/api/runs`, { body: { agent: "echo", message: "zzz" }, headers })
    if (!isRunCreated(created.json)) return yield* Effect.die(new Error(`POST /api/runs: ${created.status} ${created.text}`))
    if (Object.keys(headers).length === 0) yield* waitForRun(url, created.json.runId)
    return created.json
  })

/** Clerk's instance `acme`, created through the API. */
const acme = (url: string, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const created = yield* http(`${url}/api/instances`, { body: { agent: "clerk", id: "acme" }, headers })
    expect(created.status).toBe(201)
  })

describe("the artifact endpoints", () => {
  it.scopedLive("list a run's artifacts, download each byte for byte as an attachment, and preview an XLSX as tables, a PNG as an image, Markdown as text", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* environmentProject())
      const { conversationId, runId } = yield* aRun(server.url)
      const book = workbook()
      const common = { runId, agent: "clerk", instanceId: "acme", conversationId }
      yield* seedArtifacts(server.storeFile, [
        [{ ...common, path: "/out/revenue.xlsx", caption: "Revenue by region", mediaType: xlsxType }, book],
        [{ ...common, path: "/out/chart.png", caption: "The chart", mediaType: "image/png" }, png],
        [{ ...common, path: "/out/summary.md", caption: null, mediaType: "text/markdown" }, new TextEncoder().encode("# Summary\nNorth leads.\n")]
      ])

      const listed = yield* http(`${server.url}/api/runs/${runId}/artifacts`)
      expect(listed.status).toBe(200)
      if (!isListed(listed.json)) return expect.fail(listed.text)
      expect(listed.json.artifacts).toEqual([
        expect.objectContaining({ runId, path: "/out/revenue.xlsx", caption: "Revenue by region", mediaType: xlsxType, size: book.byteLength }),
        expect.objectContaining({ path: "/out/chart.png", caption: "The chart", mediaType: "image/png", size: png.byteLength }),
        expect.objectContaining({ path: "/out/summary.md", caption: null, mediaType: "text/markdown" })
      ])
      const [revenue, chart, summary] = listed.json.artifacts
      if (revenue === undefined || chart === undefined || summary === undefined) return expect.fail(listed.text)
      expect(revenue.url).toBe(`/api/artifacts/${revenue.id}`)

      const got = yield* download(`${server.url}${revenue.url}`)
      expect(got.status).toBe(200)
      expect([...got.bytes]).toEqual([...book])
      expect(got.headers.get("content-type")).toBe(xlsxType)
      expect(got.headers.get("content-disposition")).toBe(`attachment; filename="revenue.xlsx"`)
      expect(got.headers.get("x-content-type-options")).toBe("nosniff")
      // An agent's file runs nothing in the server's origin: its own policy, not the inspector's.
      expect(got.headers.get("content-security-policy")).toBe("default-src 'none'; style-src 'unsafe-inline'; sandbox")
      const image = yield* download(`${server.url}${chart.url}`)
      expect([...image.bytes]).toEqual([...png])
      expect(image.headers.get("content-type")).toBe("image/png")

      const table = yield* http(`${server.url}${revenue.url}/preview`)
      expect(table.status).toBe(200)
      expect(table.json).toMatchObject({
        kind: "table",
        sheets: [
          { name: "Revenue", rows: [["region", "amount"], ["north", "165"], ["south", "80"]], truncated: false },
          { name: "Orders", truncated: true }
        ]
      })
      const orders = sheetsOf(table.json)[1]?.rows ?? []
      expect(orders).toHaveLength(50)
      expect(orders[0]).toHaveLength(20)
      expect(orders[49]?.[19]).toBe("r49c19")
      expect((yield* http(`${server.url}${chart.url}/preview`)).json).toEqual({ kind: "image", mediaType: "image/png" })
      expect((yield* http(`${server.url}${summary.url}/preview`)).json).toEqual({ kind: "text", text: "# Summary\nNorth leads.\n", truncated: false })
    }))

  it.scopedLive("an unknown artifact or run is a readable 404; a run without artifacts lists none", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* environmentProject())
      const { runId } = yield* aRun(server.url)
      expect((yield* http(`${server.url}/api/runs/${runId}/artifacts`)).json).toEqual({ artifacts: [] })
      const noRun = yield* http(`${server.url}/api/runs/run_nope/artifacts`)
      expect(noRun.status).toBe(404)
      expect(noRun.json).toMatchObject({ _tag: "RunNotFound", runId: "run_nope" })
      for (const path of ["/api/artifacts/art_nope", "/api/artifacts/art_nope/preview"]) {
        const missing = yield* http(`${server.url}${path}`)
        expect(missing.status).toBe(404)
        expect(missing.json).toMatchObject({ _tag: "ArtifactNotFound", artifactId: "art_nope", message: expect.stringContaining("no artifact") })
      }
    }))

  it("names a download after the file, keeping a name that is not plain ASCII beside a safe one", () => {
    expect(attachment("/out/report.csv")).toBe(`attachment; filename="report.csv"`)
    expect(attachment("/out/Übersicht \"Q3\".csv")).toBe(`attachment; filename="_bersicht _Q3_.csv"; filename*=UTF-8''%C3%9Cbersicht%20%22Q3%22.csv`)
  })
})

describe("the environment endpoints", () => {
  it.scopedLive("list an instance's files at the latest version, an older one and v0, with the history newest first; download a file at a version", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* environmentProject())
      yield* acme(server.url)
      const api = `${server.url}/api/instances/acme/environment`

      // Before any change: v0, the files the environment starts with.
      const fresh = yield* http(`${api}?agent=clerk`)
      expect(fresh.status).toBe(200)
      expect(fresh.json).toEqual({
        agent: "clerk",
        instance: "acme",
        environment: "workspace",
        persistence: "instance",
        conversation: null,
        scope: acmeScope.key,
        version: 0,
        head: 0,
        files: [{ path: "/inbox/a.txt", size: 5, mediaType: "text/plain", text: true }],
        history: []
      })

      yield* seedVersions(server.storeFile, "run_seeded")
      // `agent` may be left out: only clerk has an instance "acme".
      const latest = yield* http(api)
      expect(latest.status).toBe(200)
      expect(latest.json).toMatchObject({
        version: 2,
        head: 2,
        files: [
          { path: "/inbox/a.txt", size: 5 },
          { path: "/out/chart.png", size: png.byteLength, mediaType: "image/png", text: false },
          { path: "/out/notes.md", size: 12, mediaType: "text/markdown", text: true }
        ],
        history: [
          { version: 2, kind: "change", label: "write_file /out/chart.png", runId: "run_seeded", files: 3 },
          { version: 1, kind: "change", label: "write_file /out/notes.md", runId: "run_seeded", files: 2 }
        ]
      })
      const older = yield* http(`${api}?agent=clerk&version=1`)
      expect(older.json).toMatchObject({ version: 1, head: 2, files: [{ path: "/inbox/a.txt" }, { path: "/out/notes.md", size: 11 }] })
      const start = yield* http(`${api}?version=0`)
      expect(start.json).toMatchObject({ version: 0, head: 2, files: [{ path: "/inbox/a.txt" }] })

      const file = (query: string) => download(`${api}/file?${query}`)
      const now = yield* file("agent=clerk&path=/out/notes.md")
      expect(now.status).toBe(200)
      expect(new TextDecoder().decode(now.bytes)).toBe("second draft")
      expect(now.headers.get("content-type")).toBe("text/plain; charset=utf-8")
      const then = yield* file("path=/out/notes.md&version=1")
      expect(new TextDecoder().decode(then.bytes)).toBe("first draft")
      // A path is normalized as the environment's verbs take it.
      const seed = yield* file("path=inbox/./a.txt&version=0")
      expect(new TextDecoder().decode(seed.bytes)).toBe("hello")
      const chart = yield* file("path=/out/chart.png")
      expect([...chart.bytes]).toEqual([...png])
      expect(chart.headers.get("content-type")).toBe("image/png")
    }))

  it.scopedLive("an unknown version, file, instance, an agent without an environment and a bad path are readable errors", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* environmentProject())
      yield* acme(server.url)
      yield* seedVersions(server.storeFile, "run_seeded")
      const api = `${server.url}/api/instances/acme/environment`

      const version = yield* http(`${api}?version=9`)
      expect(version.status).toBe(404)
      expect(version.json).toMatchObject({ _tag: "EnvironmentVersionNotFound", version: 9, head: 2, message: expect.stringContaining("versions run from 1 to 2") })
      const file = yield* http(`${api}/file?path=/out/notes.md&version=0`)
      expect(file.status).toBe(404)
      expect(file.json).toMatchObject({
        _tag: "EnvironmentFileNotFound",
        path: "/out/notes.md",
        version: 0,
        message: expect.stringContaining("GET /api/instances/acme/environment?agent=clerk lists the files")
      })
      // The generated docs are made for each run, not kept: said so, not that the file is missing.
      const readme = yield* http(`${api}/file?path=/README.md`)
      expect(readme.status).toBe(404)
      expect(readme.json).toMatchObject({ _tag: "EnvironmentFileNotFound", message: expect.stringContaining("/README.md is one of the docs Foundry makes afresh for each run") })
      const instance = yield* http(`${server.url}/api/instances/nobody/environment`)
      expect(instance.status).toBe(404)
      expect(instance.json).toMatchObject({ _tag: "InstanceNotFound", instance: "nobody" })
      const unknownAgent = yield* http(`${api}?agent=ghost`)
      expect(unknownAgent.status).toBe(404)
      expect(unknownAgent.json).toMatchObject({ _tag: "AgentNotFound", agent: "ghost" })
      const none = yield* http(`${api}?agent=echo`)
      expect(none.status).toBe(404)
      expect(none.json).toMatchObject({ _tag: "NoEnvironment", agent: "echo", message: expect.stringContaining("without an environment") })
      const climbing = yield* http(`${api}/file?path=../etc/passwd`)
      expect(climbing.status).toBe(400)
      expect(climbing.json).toMatchObject({ _tag: "BadRequest", issues: [{ path: "path" }] })
      const badVersion = yield* http(`${api}?version=-1`)
      expect(badVersion.status).toBe(400)
    }))
})

describe("an environment kept per conversation", () => {
  it.scopedLive("is browsed in the instance's latest conversation, or the one named; another instance's conversation is a 404", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* environmentProject())
      expect((yield* http(`${server.url}/api/instances`, { body: { agent: "scribe", id: "desk" } })).status).toBe(201)
      const api = `${server.url}/api/instances/desk/environment`
      const before = yield* http(`${api}?agent=scribe`)
      expect(before.status).toBe(404)
      expect(before.json).toMatchObject({ _tag: "ConversationNotFound", message: expect.stringContaining("no conversation yet") })

      const created = yield* http(`${server.url}/api/runs`, { body: { agent: "scribe", instance: "desk", message: "zzz" } })
      if (!isRunCreated(created.json)) return expect.fail(created.text)
      yield* waitForRun(server.url, created.json.runId)
      const { conversationId } = created.json
      const scope = { environment: "journal", key: `conversation:${conversationId}` }
      yield* seedVersion(server.storeFile, scope, new Map([["/notes.md", new TextEncoder().encode("day one")]]))

      const latest = yield* http(`${api}?agent=scribe`)
      expect(latest.json).toMatchObject({ persistence: "conversation", conversation: conversationId, scope: scope.key, version: 1, files: [{ path: "/notes.md", size: 7 }] })
      const named = yield* download(`${api}/file?agent=scribe&conversation=${conversationId}&path=/notes.md&version=0`)
      expect(new TextDecoder().decode(named.bytes)).toBe("start")
      const other = yield* http(`${api}?agent=scribe&conversation=conv_elsewhere`)
      expect(other.status).toBe(404)
      expect(other.json).toMatchObject({ _tag: "ConversationNotFound", conversation: "conv_elsewhere" })
    }))
})

describe("environments and artifacts where tokens are required", () => {
  it.scopedLive("a read token lists and downloads; no token gets 401", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* environmentProject(`import { defineConfig } from "foundry"\nexport default defineConfig({ auth: { required: true } })\n`))
      const admin = bearer((yield* issue(server.storeFile, "admin")).token)
      const read = bearer((yield* issue(server.storeFile, "read")).token)
      yield* acme(server.url, admin)
      const { conversationId, runId } = yield* aRun(server.url, admin)
      const [artifact] = yield* seedArtifacts(server.storeFile, [
        [{ runId, agent: "clerk", instanceId: "acme", conversationId, path: "/out/chart.png", caption: "The chart", mediaType: "image/png" }, png]
      ])
      if (artifact === undefined) return expect.fail("no artifact added")
      const paths = [
        `/api/runs/${runId}/artifacts`,
        `/api/artifacts/${artifact.id}`,
        `/api/artifacts/${artifact.id}/preview`,
        "/api/instances/acme/environment",
        "/api/instances/acme/environment/file?path=/inbox/a.txt"
      ]
      for (const path of paths) {
        expect((yield* download(`${server.url}${path}`, read)).status).toBe(200)
        expect((yield* download(`${server.url}${path}`)).status).toBe(401)
      }
    }))
})
