/**
 * Text with a NUL character (a tool's output of a binary file, a model's answer, a person's
 * message) is kept on PostgreSQL, whose text type refuses it: as U+FFFD. Before, the statement
 * failed, and the run with it, after a minute of retrying as if the store were away.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { durableProjectOnPostgres, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { skipPostgres } from "../support/postgres.js"
import { http, startServerOnItsStore, waitForRun } from "../support/server.js"

describe.skipIf(skipPostgres)("text with a NUL character on PostgreSQL", () => {
  it.scopedLive("a message or a tool output that holds one is kept, with U+FFFD in its place, and the run completes", () =>
    Effect.gen(function*() {
      const { root } = yield* durableProjectOnPostgres()
      const server = yield* startServerOnItsStore(root, plannedModel)
      // A person's message: taken, and kept.
      const said = yield* http(`${server}/api/runs`, { body: { agent: "worker", message: "look at this:\u0000" } })
      expect(said.status).toBe(202)
      const kept = yield* http(`${server}/api/runs/${(said.json as { readonly runId: string }).runId}`)
      expect(kept.json).toMatchObject({ input: "look at this:\uFFFD" })
      // A tool's output, and the model's answer with it.
      const created = yield* http(`${server}/api/runs`, { body: { agent: "worker", message: plan({ calls: [{ name: "record", arguments: { line: "before\u0000after" } }] }) } })
      expect(created.status).toBe(202)
      const run = yield* waitForRun(server, (created.json as { readonly runId: string }).runId)
      expect(run).toMatchObject({ status: "completed", output: "done: recorded before\uFFFDafter" })
    }))
})
