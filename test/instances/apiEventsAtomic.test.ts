/**
 * Creating an instance, installing, uninstalling and archiving are each written with their events,
 * or not at all. The store is made to refuse the events (a trigger on the events table that fails
 * the insert of those types, on each backend): each request answers 503 and leaves the rows as they
 * were, with no event; once the store takes events again, the same requests are written with them.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { http } from "../support/server.js"
import { allEvents } from "./apiProject.js"
import { backends, dropped } from "./refusingStore.js"

/** The events the store refuses while the refusal is on. */
const refusal = {
  statement: "INSERT",
  table: "foundry_events",
  when: "NEW.type IN ('instance.created', 'instance.installed', 'instance.uninstalled', 'instance.archived')"
} as const

const crm = (baseUrl: string) => ({ kind: "tool", id: "crm-notes", config: { baseUrl, apiKey: "key-one" } })

for (const backend of backends) {
  describe.skipIf(backend.skip)(`instance writes and their events on ${backend.name}`, () => {
    it.scopedLive("a create, an install, an uninstall and an archive whose event the store refuses are not kept; once it takes them, each is written with its event", () =>
      Effect.gen(function*() {
        const { allow: allowEvents, refuse: refuseEvents, rows, url } = yield* backend.start(refusal)
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
          expect(answer.text).not.toContain(dropped)
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
