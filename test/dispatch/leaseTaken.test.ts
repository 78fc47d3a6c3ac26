/**
 * What the log says when a run stops in a process because its conversation's lease was taken: the
 * run as stored says whether it ended elsewhere (a cancel from another process: news) or goes on
 * with another executor (a takeover: a warning). The cancel's line as a real process logs it is in
 * `execution.test.ts`. A run that ends here is neither: its lease's renewal leaves alone a lease the
 * run's last step released.
 */
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { logLeaseTaken } from "../../src/dispatch/leaseTaken.js"
import { eventOf } from "../../src/journal/trace.js"
import type { RunRecord } from "../../src/durable/records.js"
import { freshStorage, sqlite, type Storage } from "../journal/backends.js"
import { newRun, submit } from "../journal/fixtures.js"
import { durableProject, plan } from "../support/durableProject.js"
import { logLines } from "../support/logLines.js"
import { plannedModel } from "../support/plannedModel.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

/** What `logLeaseTaken` logs of a run whose lease A held, after `meanwhile` happened to it elsewhere. */
const loggedAfter = (meanwhile: (journal: Storage["journal"], run: RunRecord) => Effect.Effect<unknown, unknown>) =>
  Effect.gen(function*() {
    const { journal, store } = yield* freshStorage(sqlite)
    yield* TestClock.setTime(1_000)
    const run = yield* submit(journal, newRun("r1"))
    yield* journal.claim(run, "A", 60_000)
    yield* meanwhile(journal, run)
    const lines = yield* logLines
    yield* logLeaseTaken(store, "r1")
    return lines
  })

const tookOver =
  "run r1: another executor took over its conversation's lease from this process (this process was thought stopped, or did not renew the lease in time)"

describe("logLeaseTaken", () => {
  it.scoped("a run another executor took over is a warning that the lease's holder goes on with it", () =>
    Effect.gen(function*() {
      const lines = yield* loggedAfter((journal, run) => journal.claim(run, "B", 60_000, (holder) => holder === "A"))
      expect(lines).toEqual([`${tookOver}: the run stopped here, and the lease's holder goes on with it`])
    }))

  it.scoped("a run another executor took over and ended is a warning too, with how it ended", () =>
    Effect.gen(function*() {
      const lines = yield* loggedAfter((journal, run) =>
        Effect.flatMap(journal.claim(run, "B", 60_000, (holder) => holder === "A"), (claimed) =>
          claimed._tag === "Claimed"
            ? journal.record(run, { status: { status: "completed", output: "done" }, releaseLease: true }, claimed.lease)
            : Effect.dieMessage("B did not take the lease over"))
      )
      expect(lines).toEqual([`${tookOver}, and has ended the run (completed): the run stopped here`])
    }))

  it.scoped("a run cancelled elsewhere is news: it says the run was cancelled there", () =>
    Effect.gen(function*() {
      const lines = yield* loggedAfter((journal, run) =>
        journal.record(run, { events: [eventOf(run, "run.cancelled", { from: "running" })], status: { status: "cancelled" }, revokeLeaseFor: "B" })
      )
      expect(lines).toEqual([
        "run r1 was cancelled elsewhere while this process held its conversation's lease: the run stopped here, having written nothing after the cancel"
      ])
    }))

  it.scopedLive("runs that end here while their leases are renewed many times a second are not stopped, nor said to have been taken", () =>
    Effect.gen(function*() {
      const lines = yield* logLines
      // A renewal every 50 ms: many of them fall between a run's last step (which releases its lease)
      // and the execution letting the lease go.
      const root = yield* tempProject(durableProject(join(tmpdir(), `foundry-renewals-${randomUUID()}.log`), `{ leaseTtl: "150 millis" }`))
      const { url } = yield* startServer(root, { model: plannedModel })
      const runIds = yield* Effect.forEach(Array.from({ length: 150 }, (_, i) => i), (i) =>
        Effect.map(
          http(`${url}/api/runs`, { body: { agent: "worker", message: plan({ calls: [{ name: "record", arguments: { line: `r${i}` } }] }) } }),
          (created) => (created.json as { runId: string }).runId
        ), { concurrency: 50 })
      const ended = yield* Effect.forEach(runIds, (runId) => waitForRun(url, runId), { concurrency: 10 })
      expect(ended.map((run) => run.status)).toEqual(runIds.map(() => "completed"))
      expect(lines.filter((line) => line.includes("conversation's lease"))).toEqual([])
    }), 60_000)
})
