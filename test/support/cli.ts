/**
 * The `foundry` binary as a child process: one-shot commands, and long-running servers whose
 * output a test can wait on. Servers are stopped when the test's scope closes.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"

/** The repository's `bin/foundry.js`. */
export const foundryBin = fileURLToPath(new URL("../../bin/foundry.js", import.meta.url))

/** What a finished command printed and how it exited. */
export interface CliResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

const childEnv = (): NodeJS.ProcessEnv => {
  const { OPENAI_API_KEY: _, ...env } = process.env
  return { ...env, NO_COLOR: "1" }
}

/** Runs `foundry <args>` to its end. */
export const runCli = (args: ReadonlyArray<string>, options: { readonly cwd?: string } = {}) =>
  Effect.async<CliResult>((resume) => {
    const child = spawn(process.execPath, [foundryBin, ...args], { cwd: options.cwd, env: childEnv() })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    child.on("close", (code) => resume(Effect.succeed({ code, stdout, stderr })))
    return Effect.sync(() => child.kill("SIGKILL"))
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

/** A running `foundry` process and everything it has printed so far. */
export interface CliProcess {
  readonly child: ChildProcess
  readonly output: () => string
  /** Waits until the output (both streams) after `from` matches `pattern`. */
  readonly waitFor: (pattern: RegExp, from?: number) => Effect.Effect<string>
}

/** Starts `foundry <args>` in the test's scope, with `env` added to its environment. */
export const startCli = (
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string; readonly env?: Readonly<Record<string, string>> } = {}
) =>
  Effect.acquireRelease(
    Effect.sync((): CliProcess => {
      const child = spawn(process.execPath, [foundryBin, ...args], { cwd: options.cwd, env: { ...childEnv(), ...options.env } })
      let output = ""
      child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()))
      child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()))
      const waitFor = (pattern: RegExp, from = 0) =>
        Effect.gen(function*() {
          for (let attempt = 0; attempt < 600; attempt++) {
            const match = pattern.exec(output.slice(from))
            if (match !== null) return match[0]
            if (child.exitCode !== null || child.signalCode !== null) break
            yield* Effect.sleep("50 millis")
          }
          return yield* Effect.die(new Error(`timed out waiting for ${pattern} in:\n${output}`))
        })
      return { child, output: () => output, waitFor }
    }),
    ({ child }) =>
      Effect.async<void>((resume) => {
        if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
        child.on("close", () => resume(Effect.void))
        child.kill("SIGTERM")
      })
  )

/** `foundry start <root>` on a free loopback port, once it listens: the process and its base URL. */
export const serveProject = (root: string) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const server = yield* startCli(["start", root, "--port", String(port)])
    yield* server.waitFor(/listening on/)
    return { server, url: `http://127.0.0.1:${port}` }
  })
