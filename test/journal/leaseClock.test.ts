/**
 * On PostgreSQL leases are judged by the database's clock: a runner whose clock is ahead of the
 * others' does not take their live leases, and one whose clock is behind still finds an expired
 * lease expired. Two journals on one store, each a runner; the test sets their clock (`TestClock`)
 * away from the database's (the same machine's) and lets real time pass for a lease to expire.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import * as PgDatabase from "../../src/durable/PgDatabase.js"
import * as RunJournal from "../../src/journal/RunJournal.js"
import { freshSchema, skipPostgres } from "../support/postgres.js"
import { open } from "./backends.js"
import { newRun, submit } from "./fixtures.js"

const minute = 60_000

/** Real time passing, whatever the test's clock says. */
const wait = (millis: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, millis)))

const adopting = {
  holders: { dead: () => false, alive: () => false },
  here: () => false,
  wakes: () => true,
  starting: false
}

describe.skipIf(skipPostgres)("leases on PostgreSQL", () => {
  it.scoped("are judged by the database's clock: a runner ahead of it takes no live lease, one behind it takes an expired one", () =>
    Effect.gen(function*() {
      const url = yield* freshSchema
      const a = yield* open(PgDatabase.layer(url), RunJournal.layer)
      const b = yield* open(PgDatabase.layer(url), RunJournal.layer)
      yield* TestClock.setTime(Date.now())
      const r1 = yield* submit(a.journal, newRun("r1"))
      const claimed = yield* a.journal.claim(r1, "A", 2_000)
      expect(claimed._tag).toBe("Claimed")

      // B's clock a minute ahead: A's lease is live all the same, by claim or by takeover.
      yield* TestClock.adjust(minute)
      const held = yield* b.journal.claim(r1, "B", 2_000)
      expect(held).toMatchObject({ _tag: "Held", owner: "A", token: 1 })
      // When it expires, by the database's clock: within the lease's life, not a minute past.
      const expiresIn = held._tag === "Held" ? held.expiresIn : 0
      expect(expiresIn > 0 && expiresIn <= 2_000).toBe(true)
      expect(yield* b.journal.takeOverStranded("B", 2_000, adopting)).toEqual({ conversations: [], suspended: [] })

      // A renews by its clock (the database's really), B's still a minute ahead: still A's.
      if (claimed._tag !== "Claimed") return
      expect(yield* a.journal.renew(claimed.lease, "r1", 300)).toBe("Renewed")
      expect(yield* b.journal.claim(r1, "B", 2_000)).toMatchObject({ _tag: "Held", owner: "A" })

      // Once it has expired unrenewed, B takes it with its clock two minutes behind: a new grant.
      yield* wait(400)
      yield* TestClock.setTime(Date.now() - 2 * minute)
      expect(yield* b.journal.takeOverStranded("B", 2_000, adopting)).toEqual({ conversations: ["c1"], suspended: [] })
      expect(yield* a.journal.renew(claimed.lease, "r1", 2_000)).toBe("Taken")
      expect(yield* a.journal.claim(r1, "A", 2_000)).toMatchObject({ _tag: "Held", owner: "B", token: 2 })
    }), 30_000)
})
