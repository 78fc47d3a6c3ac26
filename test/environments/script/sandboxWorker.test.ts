import { Worker } from "node:worker_threads"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { packageLayout } from "../../../src/packageLayout.js"
import { compiledCode } from "./scripts.js"

/** The worker thread itself, spoken to in its own messages (the pool never overlaps runs; this test does). */
const withWorker = Effect.acquireRelease(
  Effect.sync(() => new Worker(packageLayout.sandboxWorkerFile, { env: {}, stdout: true, stderr: true, execArgv: ["--experimental-vm-modules"] })),
  (worker) => Effect.promise(() => worker.terminate())
)


const runMessage = (run: number, path: string, source: string) => ({
  type: "run",
  run,
  code: compiledCode(path, source),
  path,
  args: "null",
  mode: "run",
  modules: [],
  output: new SharedArrayBuffer(1024)
})

describe("the sandbox worker", () => {
  it.scopedLive("refuses import() without handing the code that asked an object of the run that is current (a later one)", () =>
    Effect.gen(function*() {
      const worker = yield* withWorker
      const done = new Map<number, unknown>()
      worker.on("message", (message: { readonly type: string; readonly run?: number; readonly result?: unknown }) => {
        if (message.type === "done" && message.run !== undefined) done.set(message.run, message.result)
      })
      // Run 1 never ends; its timer fires while run 2 is the worker's current run.
      worker.postMessage(runMessage(1, "/scripts/early.js", `export default () => new Promise(() => {
  setTimeout(() => {
    eval('import("node:fs")').catch((error) => {
      const proto = Object.getPrototypeOf(error)
      proto.planted = "by run 1"
      proto.constructor.prototype.planted = "by run 1"
    })
  }, 100)
})`))
      worker.postMessage(runMessage(2, "/scripts/later.js", `export default () => new Promise((resolve) => setTimeout(() => resolve(String(Error.prototype.planted)), 400))`))
      // Waited for, not slept on: a loaded machine starts the thread late.
      for (let waited = 0; waited < 200 && !done.has(2); waited++) yield* Effect.sleep("50 millis")
      expect(done.get(2)).toEqual({ _tag: "Completed", value: JSON.stringify("undefined") })
    }))
})
