/**
 * A route module's top level runs on the main thread, and so do the handlers that stop the server
 * gracefully on Ctrl-C or SIGTERM: a top level that never ends (a loop, a synchronous wait) left
 * `foundry dev` silent and deaf to every signal but SIGKILL. The bundle of route files starts each
 * module with `evaluationBanner`, which calls the guard installed here:
 * - until the main thread gets back to its event loop (the module's synchronous part is over, or
 *   it awaits), SIGINT and SIGTERM have no handlers, so they stop the process at once as Node's
 *   default does (what runs is recovered from the store at the next start);
 * - a watchdog thread, which a blocked main thread cannot hold up, says in the terminal which file
 *   has been loading for `slowAfterMs`, and how to get out.
 */
import { writeSync } from "node:fs"
import { Worker } from "node:worker_threads"

/** The global the banner calls, with the module's URL. */
const hookKey = Symbol.for("foundry.routeModuleEvaluates")

/** What each output file of a route bundle starts with. */
export const evaluationBanner = `globalThis[Symbol.for("foundry.routeModuleEvaluates")]?.(import.meta.url);`

/** How long a module's top level runs before the terminal is told. */
const slowAfterMs = 5000

const signals = ["SIGINT", "SIGTERM"] as const

/** The longest file name the watchdog is given, in UTF-8 bytes. */
const nameBytes = 1024

/**
 * The watchdog: `state[0]` counts changes (a module starts, the main thread is back), `state[1]`
 * is 1 while a top level runs, `state[2]` the byte length of the file's name in `name`. It waits
 * for a start, then for the next change; when none comes in time it writes to the terminal
 * itself (a message to the blocked main thread would wait for it), once per start.
 */
const watchdogSource = `
const { workerData } = require("node:worker_threads")
const { writeSync } = require("node:fs")
const state = new Int32Array(workerData.state)
const name = new Uint8Array(workerData.name)
for (;;) {
  Atomics.wait(state, 1, 0)
  const seq = Atomics.load(state, 0)
  if (Atomics.wait(state, 0, seq, workerData.slowAfterMs) !== "timed-out" || Atomics.load(state, 1) !== 1) continue
  const file = new TextDecoder().decode(name.slice(0, Atomics.load(state, 2)))
  try {
    writeSync(2, "\\n" + file + " has been loading for " + workerData.slowAfterMs / 1000 + " s: its top level has not finished " +
      "(a loop that never ends, a synchronous wait?). Nothing serves until it does: press Ctrl-C to stop, fix the file, and start again.\\n")
  } catch {}
  Atomics.wait(state, 0, seq)
}
`

interface Watchdog {
  readonly state: Int32Array
  readonly name: Uint8Array
}

// "none" once it could not start: tried once per process, not at every module.
let watchdog: Watchdog | "none" | undefined
const names = new Map<string, string>()
// The signal handlers taken away while a top level runs; undefined when they are in place.
let held: ReadonlyArray<readonly [NodeJS.Signals, ReadonlyArray<NodeJS.SignalsListener>]> | undefined

const startWatchdog = (): Watchdog | undefined => {
  try {
    const state = new Int32Array(new SharedArrayBuffer(12))
    const name = new Uint8Array(new SharedArrayBuffer(nameBytes))
    const worker = new Worker(watchdogSource, { eval: true, workerData: { state: state.buffer, name: name.buffer, slowAfterMs }, stdout: true, stderr: true })
    worker.unref()
    worker.on("error", () => undefined)
    return { state, name }
  } catch (error) {
    // Without the watchdog the signals still stop a module that never ends; only the notice is lost.
    writeSync(2, `foundry: no watchdog for route files that never finish loading (${error instanceof Error ? error.message : String(error)})\n`)
    return undefined
  }
}

/** Makes `change` to the watchdog's state (started on first use) and wakes it to look again. */
const tell = (change: (dog: Watchdog) => void) => {
  watchdog ??= startWatchdog() ?? "none"
  if (watchdog === "none") return
  change(watchdog)
  Atomics.add(watchdog.state, 0, 1)
  Atomics.notify(watchdog.state, 0)
  Atomics.notify(watchdog.state, 1)
}

const evaluates = (url: string): void => {
  tell((dog) => {
    const encoded = new TextEncoder().encode(names.get(url) ?? `a module shared by route files (${url})`).slice(0, nameBytes)
    dog.name.set(encoded)
    Atomics.store(dog.state, 2, encoded.length)
    Atomics.store(dog.state, 1, 1)
  })
  if (held !== undefined) return
  held = signals.map((signal) => [signal, process.listeners(signal)] as const)
  for (const signal of signals) process.removeAllListeners(signal)
  // Runs once the main thread is back at its event loop: the top level is over, or it awaits.
  setImmediate(() => {
    for (const [signal, listeners] of held ?? []) for (const listener of listeners) process.on(signal, listener)
    held = undefined
    tell((dog) => Atomics.store(dog.state, 1, 0))
  })
}

/**
 * Guards the evaluation of route bundles from now on; `file` is the project file whose bundle is
 * at `url`, named in the terminal when it loads long.
 */
export const guardEvaluation = (url: string, file: string): void => {
  // Names of earlier builds' bundles are of no more use: kept bounded over a long foundry dev.
  if (names.size >= 4096) names.clear()
  names.set(url, file)
  Reflect.set(globalThis, hookKey, evaluates)
}
