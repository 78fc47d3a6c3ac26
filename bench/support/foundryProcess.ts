/**
 * `bin/foundry.js` as a child process, and JSON over HTTP to it.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"

/** The repository's `bin/foundry.js`. */
export const foundryBin = fileURLToPath(new URL("../../bin/foundry.js", import.meta.url))

/** A running `foundry` process and what it has printed. */
export interface FoundryProcess {
  readonly child: ChildProcess
  readonly output: () => string
}

/** Starts `foundry <args>` with `env` added to this process's environment (minus any OpenAI key). */
export const spawnFoundry = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}): FoundryProcess => {
  const { OPENAI_API_KEY: _, ...inherited } = process.env
  const child = spawn(process.execPath, [foundryBin, ...args], { env: { ...inherited, ...env, NO_COLOR: "1" } })
  let output = ""
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
  return { child, output: () => output }
}

/** Waits until the process's output matches `pattern`; fails if it exits or `timeoutMs` passes first. */
export const waitForOutput = (process: FoundryProcess, pattern: RegExp, timeoutMs = 60_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      const match = pattern.exec(process.output())
      if (match !== null) return match
      if (process.child.exitCode !== null || process.child.signalCode !== null) break
      yield* Effect.sleep("10 millis")
    }
    return yield* Effect.fail(new Error(`foundry never printed ${pattern}; its output:\n${process.output()}`))
  })

/** Sends `signal` and waits for the process to exit. */
export const stopProcess = (process: FoundryProcess, signal: NodeJS.Signals) =>
  Effect.async<void>((resume) => {
    const { child } = process
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.once("exit", () => resume(Effect.void))
    child.kill(signal)
  })

/** A free TCP port on loopback. */
export const freePort = Effect.async<number>((resume) => {
  const server = createServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** A JSON request; the result is the status and the parsed body. */
export const requestJson = (url: string, body?: unknown) =>
  Effect.tryPromise(async () => {
    const response = await fetch(url, {
      method: body === undefined ? "GET" : "POST",
      headers: { "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const json: unknown = await response.json()
    return { status: response.status, json }
  })
