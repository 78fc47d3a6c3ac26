/**
 * Creating an instance, installing, uninstalling and archiving are each written with their events,
 * or not at all. The store is made to refuse the events (a trigger on the events table that fails
 * the insert of those types, on each backend): each request answers 503 and leaves the rows as they
 * were, with no event; once the store takes events again, the same requests are written with them.
 */
import { describe, expect, it } from "@effect/vitest"
import Sqlite from "better-sqlite3"
import { Effect, type Scope } from "effect"
import { plannedModel } from "../support/plannedModel.js"
import { connect, freshDatabase, skipPostgres } from "../support/postgres.js"
import { http, startServer, startServerOnItsStore } from "../support/server.js"
import { allEvents, instancesProject } from "./apiProject.js"

const refused = "'instance.created', 'instance.installed', 'instance.uninstalled', 'instance.archived'"

/** A server; `refuseEvents` makes the store fail the insert of the events above, `allowEvents` undoes it. */
interface Backend {
  readonly name: string
  readonly skip: boolean
  readonly start: Effect.Effect<{
    readonly url: string
    /** The instances' and installations' rows as stored. */
    readonly rows: Effect.Effect<unknown>
    readonly refuseEvents: Effect.Effect<void>
    readonly allowEvents: Effect.Effect<void>
  }, unknown, Scope.Scope>
}

const instanceRows = "SELECT agent, id, context, status, status_reason, provisioning_key, updated_at FROM foundry_instances ORDER BY agent, id"
const installationRows = "SELECT agent, instance_id, kind, capability, config, secrets, updated_at FROM foundry_installations ORDER BY instance_id, kind, capability"

const sqlite: Backend = {
  name: "SQLite",
  skip: false,
  start: Effect.gen(function*() {
    const server = yield* startServer(yield* instancesProject())
    const db = yield* Effect.acquireRelease(Effect.sync(() => new Sqlite(server.storeFile)), (db) => Effect.sync(() => db.close()))
    return {
      url: server.url,
      rows: Effect.sync(() => ({ instances: db.prepare(instanceRows).all(), installations: db.prepare(installationRows).all() })),
      refuseEvents: Effect.sync(() =>
        void db.exec(`CREATE TRIGGER refuse_events BEFORE INSERT ON foundry_events WHEN NEW.type IN (${refused})
          BEGIN SELECT RAISE(ABORT, 'the store dropped the event'); END`)
      ),
      allowEvents: Effect.sync(() => void db.exec("DROP TRIGGER refuse_events"))
    }
  })
}

const postgres: Backend = {
  name: "PostgreSQL",
  skip: skipPostgres,
  start: Effect.gen(function*() {
    const url = yield* freshDatabase
    const server = yield* startServerOnItsStore(yield* instancesProject(`import { defineConfig } from "foundry"
export default defineConfig({ store: { postgres: ${JSON.stringify(url)} } })
`), plannedModel)
    const sql = yield* connect(url)
    return {
      url: server,
      rows: Effect.orDie(Effect.all({ instances: sql.unsafe(instanceRows), installations: sql.unsafe(installationRows) })),
      refuseEvents: Effect.orDie(Effect.zipRight(
        sql.unsafe(`CREATE OR REPLACE FUNCTION refuse_event() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'the store dropped the event'; END $$`),
        sql.unsafe(`CREATE TRIGGER refuse_events BEFORE INSERT ON foundry_events FOR EACH ROW WHEN (NEW.type IN (${refused}))
          EXECUTE FUNCTION refuse_event()`)
      )),
      allowEvents: Effect.orDie(Effect.asVoid(sql.unsafe("DROP TRIGGER refuse_events ON foundry_events")))
    }
  })
}

const crm = (baseUrl: string) => ({ kind: "tool", id: "crm-notes", config: { baseUrl, apiKey: "key-one" } })

for (const backend of [sqlite, postgres]) {
  describe.skipIf(backend.skip)(`instance writes and their events on ${backend.name}`, () => {
    it.scopedLive("a create, an install, an uninstall and an archive whose event the store refuses are not kept; once it takes them, each is written with its event", () =>
      Effect.gen(function*() {
        const { allowEvents, refuseEvents, rows, url } = yield* backend.start
        const api = `${url}/api/instances`
        expect((yield* http(api, { body: { agent: "desk", id: "acme", context: { company: "Acme" } } })).status).toBe(201)
        const before = { rows: yield* rows, events: (yield* allEvents(url, "agent=desk")).events }

        yield* refuseEvents
        const attempts = {
          create: http(api, { body: { agent: "desk", id: "beta", provisioningKey: "customer-2", context: { company: "Beta" }, installations: [crm("https://crm.beta.test")] } }),
          install: http(`${api}/acme/installations?agent=desk`, { body: crm("https://crm.acme.test") }),
          archive: http(`${api}/acme?agent=desk&reason=contract%20ended`, { method: "DELETE" })
        }
        // Each against the rows and events just before it: what one kept would not hide what the next keeps.
        const outcomes: Array<unknown> = []
        for (const [name, attempt] of Object.entries(attempts)) {
          const rowsBefore = yield* rows
          const eventsBefore = (yield* allEvents(url, "agent=desk")).events
          const answer = yield* attempt
          expect(answer.text).not.toContain("the store dropped")
          outcomes.push({
            name,
            status: answer.status,
            tag: typeof answer.json === "object" && answer.json !== null && "_tag" in answer.json ? answer.json._tag : undefined,
            // Nothing of it: no instance, installation or status, and no event.
            rowsAsBefore: JSON.stringify(yield* rows) === JSON.stringify(rowsBefore),
            eventsAsBefore: JSON.stringify((yield* allEvents(url, "agent=desk")).events) === JSON.stringify(eventsBefore)
          })
        }
        expect(outcomes).toEqual(Object.keys(attempts).map((name) => ({ name, status: 503, tag: "StoreUnavailable", rowsAsBefore: true, eventsAsBefore: true })))
        expect(yield* rows).toEqual(before.rows)

        yield* allowEvents
        for (const attempt of Object.values(attempts)) expect((yield* attempt).status).toBeLessThan(300)
        // Uninstalled while the store refuses its event: the installation stays.
        yield* refuseEvents
        const uninstall = http(`${api}/beta/installations?agent=desk&kind=tool&capability=crm-notes`, { method: "DELETE" })
        const kept = yield* rows
        const failed = yield* uninstall
        expect(failed.status).toBe(503)
        expect(yield* rows).toEqual(kept)
        yield* allowEvents
        expect((yield* uninstall).status).toBe(204)

        const told = (yield* allEvents(url, "agent=desk")).events.slice(before.events.length)
        expect(told.map((event) => [event.instanceId, event.type])).toEqual([
          ["beta", "instance.created"],
          ["beta", "instance.installed"],
          ["acme", "instance.installed"],
          ["acme", "instance.archived"],
          ["beta", "instance.uninstalled"]
        ])
        expect((yield* http(`${api}/beta?agent=desk`)).json).toMatchObject({ provisioningKey: "customer-2", installations: [] })
        expect((yield* http(`${api}/acme?agent=desk`)).json).toMatchObject({ status: "archived", statusReason: "contract ended" })
      }))
  })
}
