/**
 * A route file whose top level never ends (a loop) holds the main thread, and with it the handlers
 * that stop `foundry dev` gracefully: the terminal says which file has been loading for 5 s and
 * how to get out, and Ctrl-C stops the process at once (it answered no signal but SIGKILL).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { freePort, startCli } from "../support/cli.js"
import { tempProject } from "../support/tempProject.js"

const spinningAgent = `import { defineAgent } from "foundry"
let turns = 0
while (turns >= 0) turns++
export default defineAgent({ description: "never loads" })
`

describe("a route file whose top level never ends", () => {
  it.scopedLive("is named in foundry dev's terminal after 5 s, and Ctrl-C stops foundry dev", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "agents/spin/agent.ts": spinningAgent })
      const port = yield* freePort
      const dev = yield* startCli(["dev", root, "--port", String(port)])
      // A process deaf to the test's SIGTERM would outlive it.
      yield* Effect.addFinalizer(() => Effect.sync(() => dev.child.kill("SIGKILL")))
      const notice = yield* dev.waitFor(/\S+ has been loading for 5 s: .*\n/)
      expect(notice).toBe(
        "agents/spin/agent.ts has been loading for 5 s: its top level has not finished (a loop that never ends, a synchronous wait?). " +
          "Nothing serves until it does: press Ctrl-C to stop, fix the file, and start again.\n"
      )
      dev.child.kill("SIGINT")
      const stopped = yield* Effect.async<NodeJS.Signals | number | null>((resume) => {
        if (dev.child.exitCode !== null || dev.child.signalCode !== null) return resume(Effect.succeed(dev.child.signalCode ?? dev.child.exitCode))
        dev.child.on("exit", (code, signal) => resume(Effect.succeed(signal ?? code)))
      }).pipe(Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("foundry dev did not stop on SIGINT") }))
      expect(stopped).toBe("SIGINT")
    }))
})
