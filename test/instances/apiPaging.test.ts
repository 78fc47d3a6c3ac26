import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as InstanceStorage from "../../src/durable/InstanceStorage.js"
import { http, startServer } from "../support/server.js"
import { sqliteStore } from "../support/sqliteStore.js"
import { instancesProject } from "./apiProject.js"

const count = 10_000

/** The seeded instances, in the order the API lists them (agent, then id). */
const seeded = Array.from({ length: count }, (_, index) => ({
  agent: index % 10 < 7 ? "desk" : "echo",
  id: `c-${String(index).padStart(5, "0")}`,
  provisioningKey: `key-${index}`
})).sort((a, b) => a.agent < b.agent ? -1 : a.agent > b.agent ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/** Writes the instances into a new store in one transaction, before any server opens its file. */
const seed = (store: ReturnType<typeof sqliteStore>) =>
  Effect.gen(function*() {
    const storage = yield* InstanceStorage.InstanceStorage
    // Many at once, so that they share the group commit's transactions (a create is a unit of it).
    yield* Effect.forEach(seeded, (instance) =>
      storage.create({ ...instance, context: instance.agent === "desk" ? { company: `Company ${instance.id}`, seats: 1 } : {} }, []), {
      concurrency: 256,
      discard: true
    })
  }).pipe(
    Effect.provide(InstanceStorage.layer.pipe(Layer.provideMerge(store.layer))),
    Effect.scoped
  )

interface Page {
  readonly instances: ReadonlyArray<{ readonly agent: string; readonly id: string; readonly provisioningKey: string | null }>
  readonly next: string | null
}

const isPage = (body: unknown): body is Page =>
  typeof body === "object" && body !== null && "instances" in body && Array.isArray(body.instances) && "next" in body

const pageAt = (url: string) =>
  Effect.flatMap(http(url), (response) =>
    response.status === 200 && isPage(response.json)
      ? Effect.succeed(response.json)
      : Effect.die(new Error(`${response.status} ${response.text}`)))

/** Every page of `GET /api/instances?<query>`, following `next` until it is null. */
const pages = (base: string, query: string) =>
  Effect.gen(function*() {
    const found: Array<Page> = []
    let url: string | undefined = `${base}/api/instances?${query}`
    while (url !== undefined && found.length <= count) {
      const page: Page = yield* pageAt(url)
      found.push(page)
      url = page.next === null ? undefined : `${base}/api/instances?${query}&after=${encodeURIComponent(page.next)}`
    }
    return found
  })

const keyOf = (instance: { readonly agent: string; readonly id: string }) => `${instance.agent}/${instance.id}`

describe("paging through instances", () => {
  it.scopedLive("10,000 instances page by 500 with the cursor: each seen once, in order, next null at the end; agent, search and status filter", () =>
    Effect.gen(function*() {
      const store = sqliteStore("store")
      yield* seed(store)
      const server = yield* startServer(yield* instancesProject(), { storeFile: store.file })

      const all = yield* pages(server.url, "limit=500")
      expect(all).toHaveLength(count / 500)
      expect(all.every((page) => page.instances.length === 500)).toBe(true)
      expect(all.slice(0, -1).every((page) => typeof page.next === "string")).toBe(true)
      expect(all[all.length - 1]?.next).toBeNull()
      const listed = all.flatMap((page) => page.instances.map(keyOf))
      expect(new Set(listed).size).toBe(count)
      expect(listed).toEqual(seeded.map(keyOf))

      const echo = (yield* pages(server.url, "agent=echo&limit=500")).flatMap((page) => page.instances)
      expect(echo.map(keyOf)).toEqual(seeded.filter((instance) => instance.agent === "echo").map(keyOf))

      // Part of the id or the provisioning key, any case, across agents.
      const searched = (yield* pages(server.url, "search=C-0012&limit=7")).flatMap((page) => page.instances)
      expect(searched.map(keyOf)).toEqual(seeded.filter((instance) => instance.id.includes("c-0012")).map(keyOf))
      expect(searched).toHaveLength(10)
      const byKey = yield* http(`${server.url}/api/instances?search=KEY-9999`)
      expect(byKey.json).toMatchObject({ instances: [{ agent: "echo", id: "c-09999", provisioningKey: "key-9999" }], next: null })
      const byDefault = yield* http(`${server.url}/api/instances?agent=desk`)
      expect(isPage(byDefault.json) && byDefault.json.instances.length).toBe(50)

      expect((yield* http(`${server.url}/api/instances/c-00001?agent=desk`, { method: "PATCH", body: { paused: true } })).status).toBe(200)
      const paused = yield* http(`${server.url}/api/instances?status=paused`)
      expect(paused.json).toMatchObject({ instances: [{ agent: "desk", id: "c-00001", status: "paused" }], next: null })
    }))

  it.scopedLive("a cursor that no page gave, or a limit outside 1..500, is a 400 naming the parameter", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* instancesProject())
      const forged = yield* http(`${server.url}/api/instances?after=not-a-cursor`)
      expect(forged.status).toBe(400)
      expect(forged.json).toMatchObject({ _tag: "BadRequest", issues: [{ path: "after", message: "expected the `next` of a previous page" }] })
      for (const limit of ["0", "501", "ten"]) {
        const response = yield* http(`${server.url}/api/instances?limit=${limit}`)
        expect(response.status).toBe(400)
        expect(response.json).toMatchObject({ issues: [{ path: "limit" }] })
      }
      expect((yield* http(`${server.url}/api/instances?limit=500`)).json).toEqual({ instances: [], next: null })
    }))
})
