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
export const runCli = (
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string; /** Close the output after its first chunk, as `| head -1` does. */ readonly firstChunkOnly?: boolean } = {}
) =>
  Effect.async<CliResult>((resume) => {
    const child = spawn(process.execPath, [foundryBin, ...args], { cwd: options.cwd, env: childEnv() })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString()
      if (options.firstChunkOnly === true) child.stdout.destroy()
    })
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    child.on("close", (code) => resume(Effect.succeed({ code, stdout, stderr })))
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/** Whether nothing listens on `port` on loopback now. */
const isFree = (port: number) =>
  Effect.async<boolean>((resume) => {
    const server = createServer()
    server.once("error", () => resume(Effect.succeed(false)))
    server.listen(port, "127.0.0.1", () => server.close(() => resume(Effect.succeed(true))))
  })

// Ports are handed to processes that bind them later, so a port must not be handed out again
// meanwhile: each test worker draws from a range of its own (Vitest numbers its workers), below the
// kernel's ephemeral ports (which `listen(0)` and outgoing connections take), and never twice.
const handedOut = new Set<number>()
const rangeSize = 1_500
const rangeStart = 20_000 + (Number(process.env.VITEST_POOL_ID ?? "1") % 8) * rangeSize

/** A free TCP port on loopback for a process to bind. */
export const freePort: Effect.Effect<number> = Effect.suspend(() => {
  const port = rangeStart + Math.floor(Math.random() * rangeSize)
  if (handedOut.has(port)) return freePort
  // Held before the check: fibers drawing at once (runners started together) must not both take it.
  handedOut.add(port)
  return Effect.flatMap(isFree(port), (free) => free ? Effect.succeed(port) : freePort)
})

/** A running `foundry` process and everything it has printed so far. */
export interface CliProcess {
  readonly child: ChildProcess
  readonly output: () => string
  /** Waits until the output (both streams) after `from` matches `pattern`. */
  readonly waitFor: (pattern: RegExp, from?: number) => Effect.Effect<string>
}

/**
 * Starts `foundry <args>` in the test's scope, with `env` added to its environment; `under` a
 * command that runs it (`["strace", ...flags]`), the two in a process group of their own, stopped
 * together (stopping strace alone would leave the process it traces running).
 */
export const startCli = (
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string; readonly env?: Readonly<Record<string, string>>; readonly under?: readonly [string, ...Array<string>] } = {}
) =>
  Effect.acquireRelease(
    Effect.sync((): CliProcess => {
      const command: readonly [string, ...Array<string>] = [process.execPath, foundryBin, ...args]
      const argv: readonly [string, ...Array<string>] = options.under === undefined ? command : [...options.under, ...command]
      const [program, ...rest] = argv
      const child = spawn(program, rest, {
        cwd: options.cwd,
        env: { ...childEnv(), ...options.env },
        detached: options.under !== undefined
      })
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
        if (options.under !== undefined && child.pid !== undefined) process.kill(-child.pid, "SIGTERM")
        else child.kill("SIGTERM")
      })
  )

/** `foundry start <root>` on a free loopback port (`under` a command, as `startCli` says), once it listens: the process and its base URL. */
export const serveProject = (root: string, options: { readonly under?: readonly [string, ...Array<string>] } = {}) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const server = yield* startCli(["start", root, "--port", String(port)], options)
    yield* server.waitFor(/listening on/)
    return { server, url: `http://127.0.0.1:${port}` }
  })
