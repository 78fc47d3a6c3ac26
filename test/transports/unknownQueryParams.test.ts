/**
 * The native API refuses a query parameter its endpoint does not take, as it refuses a body field:
 * a misspelt filter was dropped without a word and the answer was the unfiltered list.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { http, runIdOf, startServer, waitForRun } from "../support/server.js"
import { agentFile, tempProject } from "../support/tempProject.js"

const project = { "agents/echo/agent.ts": agentFile() }

const issuesOf = (answer: { readonly json: unknown }) =>
  typeof answer.json === "object" && answer.json !== null && "issues" in answer.json ? answer.json.issues : undefined

describe("query parameters an endpoint does not take", () => {
  it.scopedLive("GET /api/events?instance= is a 400 naming it, the one meant and those taken; ?instanceId= filters", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project))
      for (const instance of ["acme", "globex"]) {
        const created = yield* http(`${server.url}/api/runs`, { body: { agent: "echo", message: "hi", instance } })
        yield* waitForRun(server.url, runIdOf(created.json))
      }
      const filtered = (yield* http(`${server.url}/api/events?instanceId=acme`)).json as { events: Array<{ instanceId?: string }> }
      expect(filtered.events.length).toBeGreaterThan(0)
      expect(new Set(filtered.events.map((event) => event.instanceId))).toEqual(new Set(["acme"]))

      const taken = "runId, conversationId, instanceId, agent, type, since, after, before, order, limit, deltas, deltasOf"
      const message = `instance: is not a parameter of GET /api/events; did you mean "instanceId"? (it takes: ${taken})`
      for (const accept of ["application/json", "text/event-stream"]) {
        const misspelt = yield* http(`${server.url}/api/events?instance=acme`, { headers: { accept } })
        expect(misspelt.status).toBe(400)
        expect(misspelt.json).toEqual({
          _tag: "BadRequest",
          message,
          issues: [{ path: "instance", message: message.slice("instance: ".length) }]
        })
      }
    }))

  it.scopedLive("every list endpoint of the API answers alike, one issue per parameter; /v1 and known parameters pass", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project))
      const refused = (path: string) =>
        Effect.map(http(`${server.url}${path}`), (answer) => {
          expect(answer.status, path).toBe(400)
          return issuesOf(answer)
        })
      expect(yield* refused("/api/runs?instanceId=acme")).toEqual([{
        path: "instanceId",
        message: `is not a parameter of GET /api/runs; did you mean "instance"? (it takes: agent, instance, conversation, parent, before, status, limit)`
      }])
      expect(yield* refused("/api/approvals?runId=run_1&state=pending")).toEqual([
        { path: "runId", message: `is not a parameter of GET /api/approvals; did you mean "run"? (it takes: status, run, after, before, order, limit)` },
        { path: "state", message: `is not a parameter of GET /api/approvals; did you mean "status"? (it takes: status, run, after, before, order, limit)` }
      ])
      expect(yield* refused("/api/instances?q=acme")).toEqual([
        { path: "q", message: "is not a parameter of GET /api/instances (it takes: agent, search, status, limit, after)" }
      ])
      expect(yield* refused("/api/schedules?agent=echo")).toEqual([
        { path: "agent", message: "is not a parameter of GET /api/schedules, which takes none" }
      ])
      expect(yield* refused("/api/deployments?limt=5")).toEqual([
        { path: "limt", message: `is not a parameter of GET /api/deployments; did you mean "limit"? (it takes: limit)` }
      ])
      expect(yield* refused("/api/instances/acme?agnet=echo")).toEqual([
        { path: "agnet", message: `is not a parameter of GET /api/instances/:id; did you mean "agent"? (it takes: agent)` }
      ])

      for (const path of ["/api/runs?agent=echo&limit=5", "/api/approvals?status=pending", "/api/instances?search=a", "/api/schedules", "/v1/models?foo=1"]) {
        expect((yield* http(`${server.url}${path}`)).status, path).toBe(200)
      }
      // A webhook's sender may add parameters of its own: the query is not looked at.
      expect((yield* http(`${server.url}/hooks/none?source=crm`, { body: {} })).status).toBe(404)
    }))
})
