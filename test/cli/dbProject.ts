/**
 * The dev tests' project around a `Db` service its config provides: the helper agent's tool answers
 * what the service holds, and a run of the agent answers what the tool said.
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { http, type RunBody, waitForRun } from "../support/server.js"

/** The answer tool, returning what the `Db` service of `lib/db.ts` answers. */
export const dbTool = `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
import { Db } from "../../../lib/db.js"
export default defineTool({
  description: "Returns what the database answers",
  input: Schema.Struct({}),
  output: Schema.String,
  requires: [Db],
  run: () => Effect.map(Db, (db) => db.answer)
})
`

/** What a run of the helper agent answered. */
export const answerOf = (url: string) =>
  Effect.gen(function*() {
    const created = yield* http(`${url}/api/runs`, { body: { agent: "helper", message: "what is the answer?" } })
    expect(created.status, created.text).toBe(202)
    const run: RunBody = yield* waitForRun(url, (created.json as { runId: string }).runId)
    return run.output
  })
