/**
 * A PostgreSQL store whose host takes the connection and never answers: `foundry dev` and
 * `foundry start` say while they wait which address they wait for, and give up after
 * `store.connectTimeout` naming the address and the setting, exit code 1 (they hung silently).
 */
import { createServer, type Socket } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type CliProcess, freePort, startCli } from "../support/cli.js"
import { answerToolFile, answeringAgentFile, tempProject } from "../support/tempProject.js"

/** A TCP server on loopback that accepts every connection and says nothing, for the test's scope. */
const silentServer = Effect.acquireRelease(
  Effect.async<{ readonly port: number; readonly close: () => void }>((resume) => {
    const sockets = new Set<Socket>()
    const server = createServer((socket) => {
      sockets.add(socket)
      socket.on("error", () => undefined)
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      resume(Effect.succeed({
        port,
        close: () => {
          for (const socket of sockets) socket.destroy()
          server.close()
        }
      }))
    })
  }),
  ({ close }) => Effect.sync(close)
)

/** The exit code of a process, once it has ended. */
const exitCodeOf = (cli: CliProcess) =>
  Effect.async<number | null>((resume) => {
    if (cli.child.exitCode !== null || cli.child.signalCode !== null) return resume(Effect.succeed(cli.child.exitCode))
    cli.child.once("exit", (code) => resume(Effect.succeed(code)))
  })

const projectOn = (port: number) =>
  tempProject({
    "foundry.config.ts": `import { defineConfig } from "foundry"
export default defineConfig({ store: { postgres: "postgres://foundry@127.0.0.1:${port}/foundry", connectTimeout: "6 seconds" } })
`,
    "agents/helper/agent.ts": answeringAgentFile,
    "agents/helper/tools/answer.tool.ts": answerToolFile("42")
  })

describe("a PostgreSQL store that never answers", () => {
  for (const command of ["dev", "start"] as const) {
    it.scopedLive(`foundry ${command} says what it waits for, then gives up after store.connectTimeout and exits 1`, () =>
      Effect.gen(function*() {
        const silent = yield* silentServer
        const root = yield* projectOn(silent.port)
        const cli = yield* startCli([command, root, "--port", String(yield* freePort)])
        const address = `127.0.0.1:${silent.port}`
        const notice = yield* cli.waitFor(/waiting for the store at [^\n]*/)
        expect(notice).toBe(
          `waiting for the store at ${address}: no answer yet (5 s; gives up after 6 seconds, store.connectTimeout in foundry.config.ts)`
        )
        const started = Date.now()
        expect(yield* exitCodeOf(cli)).toBe(1)
        // Given up at the timeout, not at some other limit of the client's.
        expect(Date.now() - started).toBeLessThan(4_000)
        expect(cli.output()).toContain(`the store at ${address} did not answer within 6 seconds (store.connectTimeout in foundry.config.ts)`)
        expect(cli.output()).toContain("raise store.connectTimeout")
        expect(cli.output()).not.toMatch(/listening on/)
      }))
  }
})
