/**
 * A run cancelled just after a tool call's result, while the next model turn is asked: the result
 * goes with that turn's step (handed on, not waited for), so the cancel can come before it is
 * written, while it is written or after. Whatever the moment, the conversation's transcript holds
 * exactly one result for the call (the tool's, or the cancel's answer), as the strictest provider
 * requires of every later request. The cancel is made by the tool itself, in-process, at one of
 * the moments the event loop offers around the step being handed on.
 */
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Runtime } from "effect"
import { runtimeLayer } from "../../src/cli/ProjectRuntime.js"
import { loadProject } from "../../src/compiler/loadProject.js"
import { Dispatcher } from "../../src/dispatch/Dispatcher.js"
import { Store } from "../../src/durable/Store.js"
import { layerFixed } from "../../src/models/ModelResolverLive.js"
import * as Scripted from "../../src/models/scripted.js"
import { tempProject } from "../support/tempProject.js"

/** Where the tool finds what to do as it ends: the test's hook, on this process's global object. */
const hookName = "foundryTestCallEnds"

const markTool = `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Marks the run",
  input: Schema.Struct({}),
  output: Schema.String,
  run: (_input, { runId }) =>
    Effect.sync(() => {
      Reflect.get(globalThis, ${JSON.stringify(hookName)})?.(runId)
      return "marked"
    })
})
`

const agent = `import { defineAgent } from "foundry"
import mark from "./tools/mark.tool.js"

export default defineAgent({ description: "Marks", instructions: "Mark, then answer.", model: "demo", tools: [mark], maxTurns: 4 })
`

/** How the cancel is scheduled from inside the tool, around the moments the run hands its step on and writes it. */
const moments: ReadonlyArray<readonly [string, (cancel: () => void) => void]> = [
  ["a microtask", (cancel) => queueMicrotask(cancel)],
  ["process.nextTick", (cancel) => process.nextTick(cancel)],
  ["setImmediate", (cancel) => setImmediate(cancel)],
  ["two setImmediates", (cancel) => setImmediate(() => setImmediate(cancel))],
  ["setTimeout 0", (cancel) => setTimeout(cancel, 0)],
  ["setTimeout 2 ms", (cancel) => setTimeout(cancel, 2)]
]

describe("a run cancelled as its call's result is handed on", () => {
  it.scopedLive("holds exactly one result for the call in its transcript, whenever the cancel comes", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "agents/marker/agent.ts": agent, "agents/marker/tools/mark.tool.ts": markTool })
      const app = yield* loadProject(root, 1)
      // Turn 2 takes a minute: the run is asking it when the cancel comes.
      const model = Scripted.make([{ toolCalls: [{ name: "mark", arguments: {} }] }, { text: "marked it", delay: "1 minute" }])
      const context = yield* Layer.build(runtimeLayer(app, { storeFile: join(root, "foundry.db"), models: layerFixed(model) }))
      const dispatcher = Context.get(context, Dispatcher)
      const store = Context.get(context, Store)
      const runtime = yield* Effect.runtime<never>()
      let schedule: (cancel: () => void) => void = () => {}
      const cancels: Array<Fiber.RuntimeFiber<unknown, unknown>> = []
      yield* Effect.acquireRelease(
        Effect.sync(() =>
          Reflect.set(globalThis, hookName, (runId: string) => schedule(() => cancels.push(Runtime.runFork(runtime)(dispatcher.cancel(runId)))))
        ),
        () => Effect.sync(() => Reflect.deleteProperty(globalThis, hookName))
      )
      const results: Array<{ readonly moment: string; readonly status: string; readonly results: number }> = []
      for (const [index, [moment, scheduled]] of moments.entries()) {
        schedule = scheduled
        for (let i = 0; i < 5; i++) {
          const submitted = yield* dispatcher.submit({ agent: "marker", instance: `i-${index}-${i}`, message: "Mark it" })
          yield* dispatcher.await(submitted.id)
          // The run's execution ends as the cancel stops it; the cancel's own step comes after.
          let cancel = cancels.shift()
          while (cancel === undefined) cancel = yield* Effect.as(Effect.sleep("1 millis"), cancels.shift())
          expect(Exit.isSuccess(yield* Fiber.await(cancel))).toBe(true)
          const messages = (yield* store.listMessages(submitted.conversationId)).map((m) => m.message)
          const callIds = messages.flatMap((m) => m._tag === "assistant" ? m.toolCalls.map((call) => call.id) : [])
          expect(callIds).toHaveLength(1)
          const status = (yield* Effect.flatten(store.getRun(submitted.id))).status
          results.push({ moment, status, results: messages.filter((m) => m._tag === "tool" && m.toolCallId === callIds[0]).length })
        }
      }
      expect(results).toEqual(moments.flatMap(([moment]) => Array.from({ length: 5 }, () => ({ moment, status: "cancelled", results: 1 }))))
    }).pipe(Effect.provide(NodeContext.layer)), 60_000)
})
