/**
 * Which agents have an instance with a given id (how `/api/instances/:id` without `?agent=` finds
 * its instance), on each backend: only the agents asked about, in name order, in one query.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { backends, freshStorage } from "../journal/backends.js"

for (const backend of backends) {
  describe.skipIf(backend.skip)(`agents with an instance on ${backend.name}`, () => {
    it.scoped("names the agents asked about that have the id, in name order; none when no agent is asked about", () =>
      Effect.gen(function*() {
        const { instances, store } = yield* freshStorage(backend)
        for (const [agent, id] of [["support", "acme"], ["billing", "acme"], ["support", "globex"], ["retired", "acme"]] as const) {
          yield* instances.ensure(agent, id)
        }
        expect(yield* store.agentsWithInstance("acme", ["support", "billing", "sales"])).toEqual(["billing", "support"])
        expect(yield* store.agentsWithInstance("globex", ["support", "billing"])).toEqual(["support"])
        // An agent no longer in the build is not asked about, though its instance is still stored.
        expect(yield* store.agentsWithInstance("acme", ["sales"])).toEqual([])
        expect(yield* store.agentsWithInstance("initech", ["support", "billing"])).toEqual([])
        expect(yield* store.agentsWithInstance("acme", [])).toEqual([])
      }))
  })
}
