/**
 * A `PATCH` of an instance is written all at once or not at all: its context, its status, the
 * installations it adds, changes and removes, and its events. The store is made to fail the change
 * partway, as it removes an installation (a trigger that refuses the delete, on each backend), and
 * the instance is left exactly as it was, with no event told; once the store takes it, the same
 * change is written whole.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { readFrames } from "../support/eventFeed.js"
import { plannedModel } from "../support/plannedModel.js"
import { connect, freshDatabase, holdLocks, skipPostgres, someoneWaitsForALock } from "../support/postgres.js"
import { until } from "../support/until.js"
import { http, startServerOnItsStore } from "../support/server.js"
import { allEvents, instancesProject } from "./apiProject.js"
import { backends, dropped, installationRows, instanceRows } from "./refusingStore.js"

/** A second installable capability, so that a change can keep one and remove the other. */
const calendarTool = {
  "tools/calendar.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Reads a company's calendar",
  input: Schema.Struct({ day: Schema.String }),
  output: Schema.String,
  installable: { config: Schema.Struct({ calendarId: Schema.String }) },
  run: ({ day }, { config }) => Effect.succeed(\`\${config.calendarId}/\${day}\`)
})
`
}

const crm = (baseUrl: string, apiKey: string) => ({ kind: "tool", id: "crm-notes", config: { baseUrl, apiKey } })
const calendar = { kind: "tool", id: "calendar", config: { calendarId: "acme-main" } }

/** The calendar's removal, which the store refuses while the refusal is on. */
const calendarRemoval = { statement: "DELETE", table: "foundry_installations", when: "OLD.capability = 'calendar'" } as const

for (const backend of backends) {
  describe.skipIf(backend.skip)(`a change of an instance on ${backend.name}`, () => {
    it.scopedLive("that the store fails as it removes an installation leaves the instance as it was, and tells nothing; once the store takes it, it is written whole", () =>
      Effect.gen(function*() {
        const { allow: allowRemovals, refuse: refuseRemovals, rows, url } = yield* backend.start(calendarRemoval, calendarTool)
        const api = `${url}/api/instances`
        const created = yield* http(api, {
          body: { agent: "desk", id: "acme", context: { company: "Acme" }, installations: [crm("https://crm.acme.test", "key-one"), calendar] }
        })
        expect(created.status).toBe(201)
        const before = { detail: (yield* http(`${api}/acme?agent=desk`)).json, rows: yield* rows, events: (yield* allEvents(url, "agent=desk&instanceId=acme")).events }
        const lastSeq = before.events.at(-1)?.seq ?? 0
        // What the feed tells from here on: the change that did not stick must not be in it.
        const feed = yield* Effect.fork(readFrames(url, { "last-event-id": String(lastSeq) }, (_, types) => types.includes("instance.uninstalled"), "?agent=desk&instanceId=acme"))

        // A new context, a pause, the CRM at a new address with its key kept, and the calendar removed.
        const change = {
          context: { company: "Acme Corp" },
          paused: true,
          reason: "audit",
          installations: [crm("https://crm2.acme.test", "<redacted>")]
        }
        yield* refuseRemovals
        const failed = yield* http(`${api}/acme?agent=desk`, { method: "PATCH", body: change })
        expect(failed.status).toBe(503)
        expect(failed.json).toMatchObject({ _tag: "StoreUnavailable" })
        expect(failed.text).not.toContain(dropped)

        // Nothing of it: not the context, the status, the CRM's address, nor an event.
        expect((yield* http(`${api}/acme?agent=desk`)).json).toEqual(before.detail)
        expect(yield* rows).toEqual(before.rows)
        expect((yield* allEvents(url, "agent=desk&instanceId=acme")).events).toEqual(before.events)

        yield* allowRemovals
        const written = yield* http(`${api}/acme?agent=desk`, { method: "PATCH", body: change })
        expect(written.status).toBe(200)
        expect(written.json).toMatchObject({
          context: { company: "Acme Corp", seats: 1 },
          status: "paused",
          statusReason: "audit",
          installations: [{ kind: "tool", id: "crm-notes", config: { baseUrl: "https://crm2.acme.test", apiKey: "<redacted>" } }]
        })
        const told = (yield* allEvents(url, "agent=desk&instanceId=acme")).events.slice(before.events.length)
        expect(told.map((event) => [event.type, event.data])).toEqual([
          ["instance.updated", { context: { company: "Acme Corp", seats: 1 } }],
          ["instance.paused", { reason: "audit" }],
          ["instance.installed", { kind: "tool", capability: "crm-notes", config: { baseUrl: "https://crm2.acme.test", apiKey: "<redacted>" } }],
          ["instance.uninstalled", { kind: "tool", capability: "calendar" }]
        ])
        // Live, the feed told the change once it was written, and nothing before it.
        const frames = yield* Fiber.join(feed)
        expect(frames.ids).toEqual(told.map((event) => event.seq))
      }))
  })
}

describe.skipIf(skipPostgres)("a change of an instance whose connection is cut", () => {
  it.scopedLive("a PATCH whose database connection is killed as it waits to commit answers 503 and leaves the instance as it was, with no event", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabase
      const server = yield* startServerOnItsStore(yield* instancesProject(`import { defineConfig } from "foundry"
export default defineConfig({ store: { postgres: ${JSON.stringify(url)} } })
`, calendarTool), plannedModel)
      const sql = yield* connect(url)
      const api = `${server}/api/instances`
      expect((yield* http(api, { body: { agent: "desk", id: "acme", context: { company: "Acme" }, installations: [crm("https://crm.acme.test", "key-one"), calendar] } })).status)
        .toBe(201)
      const rows = Effect.orDie(Effect.all({ instances: sql.unsafe(instanceRows), installations: sql.unsafe(installationRows) }))
      const before = { rows: yield* rows, events: (yield* allEvents(server, "agent=desk&instanceId=acme")).events }

      // The change is held back where every write of events waits (the events' lock), and its
      // connection is cut there, as a database restart or a proxy would.
      const eventsLock = "SELECT pg_advisory_xact_lock(hashtext('foundry_events'), hashtext(current_schema()))"
      const release = yield* holdLocks(sql, sql.unsafe(eventsLock))
      const changing = yield* Effect.fork(http(`${api}/acme?agent=desk`, {
        method: "PATCH",
        body: { context: { company: "Acme Corp" }, paused: true, installations: [crm("https://crm2.acme.test", "<redacted>")] }
      }))
      yield* until("the change waits", someoneWaitsForALock(sql, "%pg_advisory_xact_lock%"))
      yield* Effect.orDie(sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%pg_advisory_xact_lock%'`)
      yield* release
      const answer = yield* Fiber.join(changing)
      expect(answer.status).toBe(503)
      expect(answer.json).toMatchObject({ _tag: "StoreUnavailable" })

      expect(yield* rows).toEqual(before.rows)
      expect((yield* allEvents(server, "agent=desk&instanceId=acme")).events).toEqual(before.events)
      // The server goes on: the same change, sent again, is written.
      expect((yield* http(`${api}/acme?agent=desk`, { method: "PATCH", body: { context: { company: "Acme Corp" } } })).status).toBe(200)
    }))
})
