import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { routeAccess } from "../../src/auth/routeAccess.js"
import { bearer, issue } from "../auth/support.js"
import { http, startServer } from "../support/server.js"
import { instancesProject } from "./apiProject.js"

describe("who may read and change instances", () => {
  it.scopedLive("a read token lists and reads instances but gets 403 on every change; only admin changes them", () =>
    Effect.gen(function*() {
      const root = yield* instancesProject(`import { defineConfig } from "foundry"\nexport default defineConfig({ auth: { required: true } })\n`)
      const server = yield* startServer(root)
      const api = `${server.url}/api/instances`
      const read = bearer((yield* issue(server.storeFile, "read")).token)
      const run = bearer((yield* issue(server.storeFile, "run")).token)
      const admin = bearer((yield* issue(server.storeFile, "admin")).token)

      const create = { agent: "desk", id: "acme", context: { company: "Acme" } }
      const refused = yield* http(api, { body: create, headers: run })
      expect(refused.status).toBe(403)
      expect(refused.json).toMatchObject({ _tag: "Forbidden", required: "admin", scope: "run" })
      expect((yield* http(api, { body: create, headers: admin })).status).toBe(201)

      expect((yield* http(api, { headers: read })).status).toBe(200)
      expect((yield* http(`${api}/acme`, { headers: read })).json).toMatchObject({ id: "acme" })
      expect((yield* http(`${api}/acme/conversations`, { headers: read })).status).toBe(200)
      expect((yield* http(`${server.url}/api/capabilities`, { headers: read })).status).toBe(200)
      expect((yield* http(api)).status).toBe(401)

      const changes = [
        { url: `${api}/acme`, method: "PATCH", body: { paused: true } },
        { url: `${api}/acme`, method: "DELETE" },
        { url: `${api}/acme/installations`, method: "POST", body: { kind: "tool", id: "crm-notes", config: { baseUrl: "x", apiKey: "y" } } },
        { url: `${api}/acme/installations?kind=tool&capability=crm-notes`, method: "DELETE" }
      ]
      for (const change of changes) {
        for (const headers of [read, run]) {
          const response = yield* http(change.url, { method: change.method, body: change.body, headers })
          expect(response.status).toBe(403)
          expect(response.json).toMatchObject({ _tag: "Forbidden", required: "admin" })
        }
      }
      expect((yield* http(`${api}/acme`, { headers: read })).json).toMatchObject({ status: "active", installations: [] })
      const paused = yield* http(`${api}/acme`, { method: "PATCH", body: { paused: true }, headers: admin })
      expect(paused.status).toBe(200)
      expect(paused.json).toMatchObject({ status: "paused" })
    }))

  it("the rules: reading /api/instances needs read, changing it admin; the inspector's instance pages are public shells", () => {
    expect(routeAccess("GET", "/api/instances?agent=desk")).toBe("read")
    expect(routeAccess("GET", "/api/instances/acme/conversations")).toBe("read")
    expect(routeAccess("GET", "/api/capabilities")).toBe("read")
    expect(routeAccess("POST", "/api/instances")).toBe("admin")
    expect(routeAccess("PATCH", "/api/instances/acme?agent=desk")).toBe("admin")
    expect(routeAccess("DELETE", "/api/instances/acme")).toBe("admin")
    expect(routeAccess("POST", "/api/instances/acme/installations")).toBe("admin")
    expect(routeAccess("POST", "/api/%69nstances")).toBe("admin")
    expect(routeAccess("GET", "/instances")).toBe("public")
    expect(routeAccess("GET", "/instances/desk/acme")).toBe("public")
    expect(routeAccess("POST", "/instances")).toBe("run")
    expect(routeAccess("GET", "/instancesx")).toBe("read")
  })
})
