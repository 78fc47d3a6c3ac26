/*
 * A worker thread that runs scripts, one at a time, for any environment (plain JavaScript: it runs
 * as is from `src/` and from `dist/`, which `packageLayout.sandboxWorkerFile` points at). Each
 * run gets a fresh `vm` context where `sandboxBootstrap.js` (beside this file, with
 * `sandboxLibrary.js`) builds everything the script sees, so nothing carries over from one run
 * (one agent instance) to the next; this file is the host side of that context: it compiles,
 * answers the bootstrap's `host` calls (source positions from the script's inline source map
 * among them), relays env: module calls to the main thread and reports the outcome.
 *
 * Messages: main -> worker  { type: "run", run, code, path, args, mode, modules, output, capacity }
 *                           { type: "result", run, call, ok, value | error }
 *           worker -> main  { type: "ready" } once loaded
 *                           { type: "call", run, call, module, fn, args }
 *                           { type: "done", run, result }
 *                           { type: "settled", run } once the code the run left behind is over
 * and `foundryRunMemory()` on this realm's global, which the main thread evaluates (see below).
 * `output` is a SharedArrayBuffer: [total bytes, captured bytes] as two BigInt64, then the
 * captured UTF-8 text, so the main thread has the output even of a run it had to terminate.
 *
 * Nothing of this realm may reach script code: values handed to the context are primitives or
 * objects made inside it; every host function the context can call catches its own exceptions.
 */
import { readFileSync } from "node:fs"
import { SourceMap } from "node:module"
import vm from "node:vm"
import { parentPort } from "node:worker_threads"

if (parentPort === null) throw new Error("sandboxWorker.mjs runs as a worker thread")
const port = parentPort

/*
 * A value of this realm can still reach a script without being handed to it: an error that this
 * realm's own code throws when the script drives it into a stack overflow (V8 formatting a stack,
 * say). From any object of this realm, `.constructor.constructor` is this realm's `Function`, which
 * makes code with the thread's powers (`process`, `import()`). Nothing in this thread makes code
 * from strings: so no function of this realm leads to a code constructor, and the process's native
 * doors are closed too, should another way to this realm's globals be found.
 */
const codeConstructors = [
  Function,
  Object.getPrototypeOf(async function() {}).constructor,
  Object.getPrototypeOf(function*() {}).constructor,
  Object.getPrototypeOf(async function*() {}).constructor
]
for (const constructor of codeConstructors) {
  Object.defineProperty(constructor.prototype, "constructor", { value: undefined, writable: false, configurable: false })
}
for (const door of ["binding", "_linkedBinding", "dlopen", "getBuiltinModule", "reallyExit", "kill", "chdir", "setuid", "setgid", "setgroups"]) {
  try {
    delete process[door]
  } catch {
    // A door Node made unremovable stays; the constructors above are what keeps scripts from it.
  }
}
delete globalThis.eval
delete globalThis.Function

const freshGlobal = () => vm.constants?.DONT_CONTEXTIFY ?? Object.create(null)

/** The run in progress (the host answers and timers of other runs are dropped). */
let current

/*
 * What the current (or last) run has added to this thread's memory: the V8 heap in use plus what is
 * held outside it (ArrayBuffers among it), both this isolate's own. The main thread reads it while
 * the script runs, through the inspector (`WorkerMemory.ts`), which evaluates it in this realm:
 * hence a global. It is counted from the run's start, so what the run before left for the garbage
 * collector is not charged to this one (when it is collected during this run, this run may hold
 * that much more than its figure says).
 */
const memoryInUse = () => {
  const usage = process.memoryUsage()
  return usage.heapUsed + usage.external
}
let memoryAtRunStart = memoryInUse()
globalThis.foundryRunMemory = () => memoryInUse() - memoryAtRunStart

/** A script's `env:` calls waiting for their answers at most: each answer is held in memory outside any heap limit. */
const maxCallsInFlight = 64

/**
 * `import()` is refused with a plain string: an object (an error) would belong to some realm, and
 * the code that asked may be a run's leftover while another run is current, which must never
 * reach that run's realm. (Compiling per run with a callback bound to the run would leak: Node 20
 * keeps every script compiled with its own `importModuleDynamically`.)
 */
const importModuleDynamically = () => {
  throw "scripts cannot import(): import env: modules at the top of the script"
}
const compile = (source, filename, lineOffset = 0) => new vm.Script(source, { filename, lineOffset, importModuleDynamically })

const sibling = (file) => readFileSync(new URL(`./${file}`, import.meta.url), "utf8")
const library = compile(sibling("sandboxLibrary.js"), "foundry:sandbox-library")
const bootstrap = compile(sibling("sandboxBootstrap.js"), "foundry:sandbox")

// Compiled once, run in every context that loads them.
const pureScripts = new Map()
const scriptCache = new Map()
const maxCachedScripts = 32

/** The script's code as a function of (exports, require, module), with its source map. */
const compiled = (code, path) => {
  const key = `${path}\0${code}`
  const hit = scriptCache.get(key)
  if (hit !== undefined) {
    scriptCache.delete(key)
    scriptCache.set(key, hit)
    return hit
  }
  const script = compile(`(function (exports, require, module) {"use strict";\n${code}\n})`, path, -1)
  const entry = { script, map: sourceMapOf(code) }
  scriptCache.set(key, entry)
  if (scriptCache.size > maxCachedScripts) scriptCache.delete(scriptCache.keys().next().value)
  return entry
}

const sourceMapOf = (code) => {
  const inline = /\/\/# sourceMappingURL=data:application\/json;base64,([A-Za-z0-9+/=]+)\s*$/.exec(code)
  if (inline === null) return undefined
  try {
    return new SourceMap(JSON.parse(Buffer.from(inline[1], "base64").toString("utf8")))
  } catch {
    return undefined
  }
}

/** A position in the compiled script as "line:column" in its source (1-based both). */
const sourcePosition = (map, line, column) => {
  const entry = map?.findEntry(line - 1, column - 1)
  return entry?.originalLine === undefined ? `${line}:${column}` : `${entry.originalLine + 1}:${entry.originalColumn + 1}`
}

/** A thrown value as text: this realm's own errors directly, the sandbox's by its own means. */
const describeError = (run, error) => error instanceof Error ? `${error.name}: ${error.message}` : run.control.describe(error)

const textOf = (value) => {
  try {
    return String(value)
  } catch {
    return "an error that cannot be shown"
  }
}

const outputSink = (buffer, capacity) => {
  const header = new BigInt64Array(buffer, 0, 2)
  // The buffer is the worker's, kept from run to run; this run captures `capacity` bytes of it.
  const data = new Uint8Array(buffer, 16, Math.min(capacity ?? buffer.byteLength - 16, buffer.byteLength - 16))
  const encoder = new TextEncoder()
  let total = 0
  let written = 0
  return (text) => {
    total += Buffer.byteLength(text)
    if (written < data.length) written += encoder.encodeInto(text, data.subarray(written)).written
    Atomics.store(header, 0, BigInt(total))
    Atomics.store(header, 1, BigInt(written))
  }
}

/** JSON (from the host) with each byte array as a `{"__bytes":[offset,length]}` into one latin1 string. */
const encodeForContext = (value) => {
  let bytes = ""
  const json = JSON.stringify(value, (_key, v) => {
    const view = v instanceof ArrayBuffer ? new Uint8Array(v) : ArrayBuffer.isView(v) ? v : undefined
    if (view === undefined) return v
    const part = Buffer.from(view.buffer, view.byteOffset, view.byteLength).toString("latin1")
    const marker = { __bytes: [bytes.length, part.length] }
    bytes += part
    return marker
  })
  // "" stands for undefined (a host function that returns nothing), which JSON has no text for.
  return { json: json ?? "", bytes }
}
const decodeFromContext = (json, bytes) =>
  JSON.parse(json, (_key, v) =>
    v !== null && typeof v === "object" && Array.isArray(v.__bytes) && Object.keys(v).length === 1
      ? new Uint8Array(Buffer.from(bytes.slice(v.__bytes[0], v.__bytes[0] + v.__bytes[1]), "latin1"))
      : v)

/** The one host function a run's context holds (in the bootstrap's closure). Takes and returns primitives. */
const hostFor = (run) => (op, a, b, c, d, e) => {
  if (run.finished) return "the run is over"
  try {
    switch (op) {
      case "out":
        if (typeof a === "string") run.write(a)
        return undefined
      case "call":
        if (typeof a !== "number" || typeof b !== "string" || typeof c !== "string" || typeof d !== "string" || typeof e !== "string") return "a malformed call"
        if (run.calls.size >= maxCallsInFlight) {
          return `env:${b} ${c}: the script has ${maxCallsInFlight} env: calls waiting for answers, the most it may: await some before making more`
        }
        port.postMessage({ type: "call", run: run.id, call: a, module: b, fn: c, args: decodeFromContext(d, e) })
        run.calls.add(a)
        return undefined
      case "timer": {
        if (typeof a !== "number" || typeof b !== "number") return undefined
        const handle = setTimeout(() => {
          run.timers.delete(a)
          if (!run.finished) run.control.fire(a)
        }, Math.min(b, 2 ** 31 - 1))
        run.timers.set(a, handle)
        return undefined
      }
      case "cancel":
        clearTimeout(run.timers.get(a))
        run.timers.delete(a)
        return undefined
      case "map":
        return typeof a === "number" && typeof b === "number" ? sourcePosition(run.map, a, b) : undefined
      case "pure":
        return typeof a === "string" ? loadPure(run, a) : "a malformed module name"
      case "done":
        if (typeof a === "string") finish(run, a)
        return undefined
      default:
        return `no host operation ${textOf(op)}`
    }
  } catch (error) {
    return `the host failed: ${error instanceof Error ? error.message : "unknown error"}`
  }
}

/** A pure module's exports, made by its bundle evaluated in the run's context; or why not. */
const loadPure = (run, name) => {
  const spec = run.modules.find((module) => module.name === name && module.kind === "pure")
  if (spec === undefined || typeof spec.source !== "string") return spec?.unavailable ?? `env:${name} has no bundled source`
  let script = pureScripts.get(spec.source)
  if (script === undefined) {
    script = compile(spec.source, `env:${name}`)
    pureScripts.set(spec.source, script)
  }
  try {
    return script.runInContext(run.context)
  } catch (error) {
    return `env:${name} failed to load: ${describeError(run, error)}`
  }
}

const finish = (run, json) => {
  run.finished = true
  for (const handle of run.timers.values()) clearTimeout(handle)
  run.timers.clear()
  if (current === run) current = undefined
  let result
  try {
    const raw = JSON.parse(json)
    result = raw._tag === "Failed" ? { _tag: "Failed", error: raw.error }
      : raw._tag === "Tests" ? { _tag: "Tests", results: raw.results.map((r) => r.ok ? { name: r.name, ok: true } : { name: r.name, ok: false, error: r.error }) }
      : { _tag: "Completed", value: raw.value }
  } catch (error) {
    result = { _tag: "Failed", error: `the sandbox's result is not readable: ${textOf(error)}` }
  }
  port.postMessage({ type: "done", run: run.id, result })
  // Microtasks the script left (a promise chain still running, a loop in a `then`) run before any
  // macrotask: this one says they are over, and until it does the main thread gives this thread
  // no other run (it terminates the thread if they never end).
  setImmediate(() => port.postMessage({ type: "settled", run: run.id }))
}

const startRun = (message) => {
  memoryAtRunStart = memoryInUse()
  const run = {
    id: message.run,
    modules: message.modules,
    write: outputSink(message.output, message.capacity),
    timers: new Map(),
    calls: new Set(),
    finished: false,
    context: undefined,
    control: undefined,
    map: undefined
  }
  current = run
  try {
    run.context = vm.createContext(freshGlobal(), { name: message.path })
    run.control = bootstrap.runInContext(run.context)(hostFor(run), library.runInContext(run.context))
    const script = compiled(message.code, message.path)
    run.map = script.map
    const body = script.script.runInContext(run.context)
    const modules = message.modules.map(({ name, kind, exports, unavailable }) => ({ name, kind, exports, unavailable }))
    run.control.start(body, message.path, message.mode, message.args, JSON.stringify(modules))
  } catch (error) {
    const text = error instanceof Error ? `${error.name}: ${error.message}` : textOf(error)
    finish(run, JSON.stringify({ _tag: "Failed", error: text }))
  }
}

const deliver = (message) => {
  const run = current
  if (run === undefined || run.id !== message.run || run.finished || !run.calls.delete(message.call)) return
  if (!message.ok) {
    run.control.deliver(message.call, false, String(message.error), "")
    return
  }
  let encoded
  try {
    encoded = encodeForContext(message.value)
  } catch (error) {
    run.control.deliver(message.call, false, `the host's answer is not JSON: ${textOf(error)}`, "")
    return
  }
  run.control.deliver(message.call, true, encoded.json, encoded.bytes)
}

port.on("message", (message) => {
  if (message.type === "run") startRun(message)
  else if (message.type === "result") deliver(message)
})
port.postMessage({ type: "ready" })

// A promise a script leaves rejected is its own business: noted in its output, never a crash.
process.on("unhandledRejection", (reason) => {
  const run = current
  if (run !== undefined && !run.finished) run.write(`(unhandled rejection) ${describeError(run, reason)}\n`)
})
