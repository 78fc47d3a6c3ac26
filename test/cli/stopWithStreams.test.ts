/**
 * A server stopped while clients follow its event streams (an inspector tab, a client following a
 * run that waits on a person) stops: Node's server waits for every connection to end, and an
 * event stream never ends on its own, so `foundry dev` ignored Ctrl-C, and `foundry start` its
 * process manager's SIGTERM, until every such client went. Now the streams end (their clients
 * reconnect, to the next server) and the process exits as a server stopped by a signal does (0).
 */
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { type CliProcess, freePort, serveProject, startCli } from "../support/cli.js"
import { durableProject, plan } from "../support/durableProject.js"
import { readToEnd } from "../support/eventFeed.js"
import { http, pendingApproval, runIdOf } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

/** Follows `url` as an event stream; its body read to its end (a body cut instead fails). */
const followToEnd = (url: string) =>
  Effect.gen(function*() {
    const reader = yield* Effect.promise(async () => (await fetch(url, { headers: { accept: "text/event-stream" } })).body?.getReader())
    return yield* Effect.fork(Effect.promise(() => readToEnd(reader)))
  })

/** Sends `signal` to the process and waits for its exit code. */
const stop = (process: CliProcess, signal: NodeJS.Signals) =>
  Effect.async<number | null>((resume) => {
    process.child.once("exit", (code) => resume(Effect.succeed(code)))
    process.child.kill(signal)
  }).pipe(Effect.timeoutFail({ duration: "15 seconds", onTimeout: () => new Error(`the server did not stop on ${signal}:\n${process.output()}`) }))

describe("a server stopped while clients follow its event streams", () => {
  it.scopedLive("foundry start stops on SIGTERM, ending the feed's stream and that of a run waiting on a person", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(durableProject(join(tmpdir(), `foundry-stop-${randomUUID()}.log`), "", { plannedModelInFile: true }))
      const { server, url } = yield* serveProject(root)
      const created = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({ calls: [{ name: "transfer", arguments: { amount: 5 } }] }) } })
      const runId = runIdOf(created.json)
      yield* pendingApproval(url, runId)
      const feed = yield* followToEnd(`${url}/api/events`)
      const run = yield* followToEnd(`${url}/api/runs/${runId}/events`)
      expect(yield* stop(server, "SIGTERM")).toBe(0)
      // Ended, not cut: the run's stream had its events up to the wait.
      expect(yield* Fiber.join(run)).toContain("event: approval.requested")
      expect(yield* Fiber.join(feed)).toContain(": heartbeat")
    }))

  it.scopedLive("foundry dev stops on Ctrl-C with the inspector's stream open", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(durableProject(join(tmpdir(), `foundry-stop-${randomUUID()}.log`)))
      const port = yield* freePort
      const dev = yield* startCli(["dev", root, "--port", String(port)])
      yield* dev.waitFor(/listening on/)
      const feed = yield* followToEnd(`http://127.0.0.1:${port}/api/events?deltas=false`)
      expect(yield* stop(dev, "SIGINT")).toBe(0)
      expect(yield* Fiber.join(feed)).toContain(": heartbeat")
    }))
})
