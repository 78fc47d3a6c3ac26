import { existsSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { durableProject, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { http, type RunBody, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const lines = (log: string) => existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").filter((l) => l !== "") : []

const setup = Effect.gen(function*() {
  const log = join(tmpdir(), `foundry-sub-${randomUUID()}.log`)
  const root = yield* tempProject(durableProject(log))
  const server = yield* startServer(root, { model: plannedModel })
  return { log, url: server.url }
})

const lead = (url: string, message: string) =>
  Effect.map(http(`${url}/api/runs`, { body: { agent: "lead", message } }), (r) => r.json as { runId: string })

const runsOf = (url: string, agent: string) =>
  Effect.map(http(`${url}/api/runs?agent=${agent}`), (r) => r.json as ReadonlyArray<RunBody & { id: string }>)

describe("subagents and spawned runs", () => {
  it.scopedLive("a subagent call runs a child run and the parent continues with its answer", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup
      const childPlan = plan({ calls: [{ name: "record", arguments: { line: "from the child" } }] })
      const parent = yield* lead(url, plan({ calls: [{ name: "ask-worker", arguments: { message: childPlan } }] }))
      const done = yield* waitForRun(url, parent.runId)
      expect(done).toMatchObject({ status: "completed", output: "done: done: recorded from the child" })
      const [child] = yield* runsOf(url, "worker")
      expect(child).toMatchObject({ status: "completed", input: childPlan, parentRunId: parent.runId })
      // Listed by their parent, however many runs came after them.
      const children = (yield* http(`${url}/api/runs?parent=${parent.runId}`)).json as ReadonlyArray<{ id: string }>
      expect(children.map((run) => run.id)).toEqual([child!.id])
      expect((yield* http(`${url}/api/runs?parent=${child!.id}`)).json).toEqual([])
      expect(lines(log)).toEqual([`${child!.id} call_1_1 from the child`])
      const events = (yield* http(`${url}/api/runs/${parent.runId}/events`)).json as Array<{ type: string; data: Record<string, unknown> }>
      expect(events.find((e) => e.type === "run.suspended")?.data).toMatchObject({ reason: "child", childRunId: child!.id })
      expect(events.find((e) => e.type === "tool.call.completed")?.data).toMatchObject({ output: { runId: child!.id } })
      // The parent waits once and wakes once: woken by its child's end, it does not suspend again.
      const lifecycle = events.filter((e) => e.type.startsWith("run.")).map((e) => e.type)
      expect(lifecycle).toEqual(["run.queued", "run.started", "run.suspended", "run.resumed", "run.completed"])
    }))

  it.scopedLive("parents whose children end as they suspend each go on once: a child's end does not interrupt its parent going on here", () =>
    Effect.gen(function*() {
      const { url } = yield* setup
      // Children that answer at once end in the commit of their parent's suspension, or just after:
      // the parent reads its child as ended and goes on while the child's end wakes it.
      const ask = plan({ calls: [{ name: "ask-worker", arguments: { message: plan({}) } }] })
      const parents = yield* Effect.forEach(Array.from({ length: 60 }), () => lead(url, ask), { concurrency: 20 })
      const lifecycles = new Set<string>()
      for (const parent of parents) {
        expect(yield* waitForRun(url, parent.runId)).toMatchObject({ status: "completed", output: "done: nothing to do" })
        const events = (yield* http(`${url}/api/runs/${parent.runId}/events`)).json as Array<{ type: string }>
        lifecycles.add(events.filter((e) => e.type.startsWith("run.") || e.type.startsWith("model.turn.")).map((e) => e.type).join(" "))
      }
      // Interrupted, a parent was executed again: a second `run.resumed` (or a turn asked twice).
      expect([...lifecycles]).toEqual([
        "run.queued run.started model.turn.started model.turn.completed run.suspended run.resumed model.turn.started model.turn.completed run.completed"
      ])
    }))

  it.scopedLive("cancelling a parent cancels the child it waits for", () =>
    Effect.gen(function*() {
      const { url } = yield* setup
      const childPlan = plan({ calls: [{ name: "slow", arguments: { ms: 30_000 } }] })
      const parent = yield* lead(url, plan({ calls: [{ name: "ask-worker", arguments: { message: childPlan } }] }))
      let children: ReadonlyArray<RunBody & { id: string }> = []
      for (let i = 0; i < 200 && children[0]?.status !== "running"; i++) {
        children = yield* runsOf(url, "worker")
        yield* Effect.sleep("20 millis")
      }
      const cancelled = yield* http(`${url}/api/runs/${parent.runId}/cancel`, { method: "POST" })
      expect(cancelled.json).toMatchObject({ status: "cancelled" })
      expect((yield* http(`${url}/api/runs/${children[0]!.id}`)).json).toMatchObject({ status: "cancelled" })
    }))

  it.scopedLive("a subagent whose instances need a context is not given one made without it: the call says to create it first", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/account/agent.ts": `import { Schema } from "effect"
import { defineAgent } from "foundry"
export default defineAgent({
  description: "Knows one customer's account",
  context: Schema.Struct({ company: Schema.String }),
  instructions: ({ instance }) => "You serve " + instance.context.company
})
`,
        "agents/lead/agent.ts": `import { defineAgent } from "foundry"
import account from "../account/agent.js"
export default defineAgent({ description: "Asks the account agent", subagents: [account] })
`
      })
      const { url } = yield* startServer(root, { model: plannedModel })
      const ask = plan({ calls: [{ name: "ask-account", arguments: { message: plan({}) } }] })
      const refused = yield* waitForRun(url, (yield* lead(url, ask)).runId)
      expect(refused.status).toBe("completed")
      expect(refused.output).toContain(`could not start account: agent "account" has no instance "default", and its instances need a context`)
      expect(yield* runsOf(url, "account")).toEqual([])
      expect((yield* http(`${url}/api/instances/default?agent=account`)).status).toBe(404)
      // Created with its context, the same call runs the child on it.
      const created = yield* http(`${url}/api/instances`, { body: { agent: "account", id: "default", context: { company: "Acme" } } })
      expect(created.status).toBe(201)
      const answered = yield* waitForRun(url, (yield* lead(url, ask)).runId)
      expect(answered).toMatchObject({ status: "completed", output: "done: nothing to do" })
    }))

  it.scopedLive("a tool can spawn a run of another agent without waiting; the run records its parent", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup
      const note = plan({ calls: [{ name: "record", arguments: { line: "spawned work" } }] })
      const parent = yield* lead(url, plan({ calls: [{ name: "note", arguments: { message: note } }] }))
      const done = yield* waitForRun(url, parent.runId)
      expect(done.status).toBe("completed")
      const [spawned] = yield* runsOf(url, "worker")
      expect(done.output).toBe(`done: spawned ${spawned!.id}`)
      expect(yield* waitForRun(url, spawned!.id)).toMatchObject({ status: "completed", parentRunId: parent.runId })
      expect(lines(log)).toEqual([`${spawned!.id} call_1_1 spawned work`])
    }))
})
