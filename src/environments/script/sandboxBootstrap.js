/*
 * The code that builds a script run's world inside its fresh `vm` context (not a module: the
 * worker compiles this file as a script; its value is the function below). The worker calls it
 * once, before any script code runs, with `library` (`sandboxLibrary.js`, evaluated in the same
 * context) and `host`: the one host-realm function of the run. It stays in
 * this closure, so script code never reaches it; everything a script sees is built here, in the
 * sandbox's own realm. Data crosses `host` only as primitives (JSON strings, and bytes as latin1
 * strings) both ways, so no object of the host's realm (whose `constructor.constructor` would be
 * the host's `Function`) ever enters the sandbox. A host function can still throw its own realm's
 * error (a stack overflow inside it): `send` never lets one through.
 *
 * host(op, ...primitives):
 *   "out" text | "call" id module fn json bytes | "timer" id ms | "cancel" id |
 *   "pure" name -> the module's exports or an error message | "map" line column -> "line:column"
 *   in the source | "done" json
 * The worker drives the run through the functions returned: start(body, path, mode, args, modules),
 * deliver(id, ok, json, bytes) for a host call's answer, fire(id) for a timer, and describe to
 * turn values into text.
 */
(function bootstrap(host, library) {
  "use strict"
  const { asBytes, describe, deepEqual, TextEncoder, TextDecoder, atob, btoa, URLSearchParams } = library
  // Intrinsics as they are before script code can replace them.
  const G = globalThis
  const ErrorCtor = Error
  const TypeErrorCtor = TypeError
  const PromiseCtor = Promise
  const MapCtor = Map
  const U8 = Uint8Array
  const jsonParse = JSON.parse
  const jsonStringify = JSON.stringify
  const apply = Reflect.apply
  const keys = Object.keys
  const freeze = Object.freeze
  const defineProperty = Object.defineProperty
  const isArray = Array.isArray
  const objectIs = Object.is
  const fromCharCode = String.fromCharCode
  const stringOf = String
  const promiseThen = Promise.prototype.then
  const mapGet = Map.prototype.get
  const mapSet = Map.prototype.set
  const mapDelete = Map.prototype.delete
  const mapHas = Map.prototype.has

  /** Calls the host; a host-realm exception is replaced by one of this realm, never passed on. */
  const send = (op, a, b, c, d, e) => {
    let answer
    let failed = false
    try {
      answer = host(op, a, b, c, d, e)
    } catch {
      failed = true
    }
    if (failed) throw new ErrorCtor(`the sandbox's host did not answer ${op}`)
    return answer
  }

  // ---- bytes <-> latin1 strings (one char per byte), the form bytes cross the host in
  const latin1Of = (bytes) => {
    let text = ""
    for (let i = 0; i < bytes.length; i += 8192) text += apply(fromCharCode, undefined, bytes.subarray(i, i + 8192))
    return text
  }
  const bytesOf = (text, from, length) => {
    const bytes = new U8(length)
    for (let i = 0; i < length; i++) bytes[i] = text.charCodeAt(from + i)
    return bytes
  }

  /** JSON with every byte array replaced by `{"__bytes":[offset,length]}` into one latin1 string; "" is undefined. */
  const encode = (value) => {
    let bytes = ""
    const json = jsonStringify(value, (_key, v) => {
      const array = asBytes(v)
      if (array === undefined) return typeof v === "bigint" ? stringOf(v) : v
      const part = latin1Of(array)
      const marker = { __bytes: [bytes.length, part.length] }
      bytes += part
      return marker
    })
    return { json: json === undefined ? "null" : json, bytes }
  }
  const decode = (json, bytes) =>
    json === "" ? undefined : jsonParse(json, (_key, v) =>
      v !== null && typeof v === "object" && isArray(v.__bytes) && keys(v).length === 1 ? bytesOf(bytes, v.__bytes[0], v.__bytes[1]) : v)

  // ---- text: what console prints, and an error's readable form
  const format = (args) => {
    let line = ""
    for (let i = 0; i < args.length; i++) line += (i === 0 ? "" : " ") + describe(args[i])
    return line
  }
  /** An error as text: its stack (as `prepareStackTrace` below writes it: the script's lines in its source). */
  const errorText = (error) => {
    try {
      if (error !== null && typeof error === "object" && typeof error.stack === "string") return error.stack
    } catch {
      // an error whose stack throws: shown as a value
    }
    return `Uncaught ${describe(error)}`
  }

  // ---- stacks. Node formats a stack with the realm's `Error.prepareStackTrace`, handing it call
  // sites of every frame, the worker's too: this one, fixed before script code runs, never lets
  // them out. It keeps the script's frames (at their lines in the source) and pure modules', and
  // nothing of the host.
  let scriptPath
  const position = /^\d+:\d+$/
  const locationOf = (frame) => {
    const file = frame.getFileName()
    const line = frame.getLineNumber()
    const column = frame.getColumnNumber()
    if (file === scriptPath && typeof line === "number" && typeof column === "number") {
      const mapped = send("map", line, column)
      return `${file}:${typeof mapped === "string" && position.test(mapped) ? mapped : `${line}:${column}`}`
    }
    return typeof file === "string" && file.startsWith("env:") ? `${file}:${line}:${column}` : undefined
  }
  const headerOf = (error) => {
    try {
      const name = error.name === undefined ? "Error" : stringOf(error.name)
      const message = error.message === undefined ? "" : stringOf(error.message)
      return name === "" ? message : message === "" ? name : `${name}: ${message}`
    } catch {
      return "Error"
    }
  }
  const prepareStackTrace = (error, frames) => {
    let text = headerOf(error)
    try {
      for (let i = 0; i < frames.length; i++) {
        const frame = frames[i]
        const location = locationOf(frame)
        if (location === undefined) continue
        const name = frame.getFunctionName()
        text += `\n    at ${frame.isAsync() ? "async " : ""}${name ? `${name} (${location})` : location}`
      }
    } catch {
      // a frame that cannot be read is left out
    }
    return text
  }
  defineProperty(ErrorCtor, "prepareStackTrace", { value: prepareStackTrace, writable: false, configurable: false })
  // Node asks `globalThis.Error.prepareStackTrace` of the error's realm, by name: a script that
  // put another `Error` there would be handed the frames (host paths and functions) itself.
  defineProperty(G, "Error", { value: ErrorCtor, writable: false, configurable: false, enumerable: false })

  // ---- no code of a run after its end. Script code runs only when this realm calls it, a timer
  // fires (the worker clears them at the end) or a host call answers (dropped after the end);
  // what it leaves in microtasks the worker waits out. These would have the thread run it later,
  // in another run's time: a finalizer, a wait on shared memory, a WebAssembly compilation.
  delete G.FinalizationRegistry
  if (G.Atomics !== undefined) delete G.Atomics.waitAsync
  const wasm = G.WebAssembly
  if (wasm !== undefined) {
    const WasmModule = wasm.Module
    const WasmInstance = wasm.Instance
    const compile = (bytes) => new PromiseCtor((resolve) => resolve(new WasmModule(bytes)))
    const instantiate = (source, imports) =>
      new PromiseCtor((resolve) => {
        if (source instanceof WasmModule) {
          resolve(new WasmInstance(source, imports))
          return
        }
        const module = new WasmModule(source)
        resolve({ module, instance: new WasmInstance(module, imports) })
      })
    for (const [name, value] of [["compile", compile], ["instantiate", instantiate]]) {
      defineProperty(wasm, name, { value, writable: true, configurable: true, enumerable: false })
    }
    delete wasm.compileStreaming
    delete wasm.instantiateStreaming
  }

  // ---- the globals a script has
  const print = (...args) => {
    send("out", `${format(args)}\n`)
  }
  const console = freeze({ __proto__: null, log: print, info: print, debug: print, warn: print, error: print, trace: print })

  let nextTimer = 0
  const timers = new MapCtor()
  const setTimeout = (callback, ms, ...args) => {
    if (typeof callback !== "function") throw new TypeErrorCtor("setTimeout needs a function")
    const id = ++nextTimer
    apply(mapSet, timers, [id, { callback, args }])
    send("timer", id, typeof ms === "number" && ms > 0 ? ms : 0)
    return id
  }
  const clearTimeout = (id) => {
    if (typeof id === "number" && apply(mapDelete, timers, [id])) send("cancel", id)
  }
  const queueMicrotask = (callback) => {
    apply(promiseThen, PromiseCtor.resolve(), [() => callback()])
  }

  for (const [name, value] of [
    ["console", console], ["setTimeout", setTimeout], ["clearTimeout", clearTimeout], ["queueMicrotask", queueMicrotask],
    ["TextEncoder", TextEncoder], ["TextDecoder", TextDecoder], ["atob", atob], ["btoa", btoa], ["URLSearchParams", URLSearchParams]
  ]) defineProperty(G, name, { value, writable: true, configurable: true, enumerable: false })

  // ---- env:* modules
  let nextCall = 0
  const pending = new MapCtor()
  /** A host module's function: its call crosses as JSON, its answer comes back through `deliver`. */
  const hostFunction = (module, fn) => (...args) =>
    new PromiseCtor((resolve, reject) => {
      const id = ++nextCall
      // Captured now, so a failure shows the script's line that made the call.
      const site = new ErrorCtor(`env:${module} ${fn}`)
      const { json, bytes } = encode(args)
      apply(mapSet, pending, [id, { resolve, reject, site }])
      const refused = send("call", id, module, fn, json, bytes)
      if (typeof refused === "string") {
        apply(mapDelete, pending, [id])
        reject(new TypeErrorCtor(refused))
      }
    })

  class AssertionError extends ErrorCtor {
    get name() { return "AssertionError" }
  }
  const assert = (condition, message) => {
    if (!condition) throw new AssertionError(message === undefined ? "assertion failed" : stringOf(message))
  }
  assert.equal = (actual, expected, message) => {
    if (!(actual === expected || objectIs(actual, expected))) throw new AssertionError(message ?? `expected ${describe(actual)} to equal ${describe(expected)}`)
  }
  assert.deepEqual = (actual, expected, message) => {
    if (!deepEqual(actual, expected, [])) throw new AssertionError(message ?? `expected ${describe(actual)} to deeply equal ${describe(expected)}`)
  }
  freeze(assert)
  const tests = []
  const test = (name, fn) => {
    if (typeof fn !== "function") throw new TypeErrorCtor(`test ${stringOf(name)} needs a function`)
    tests.push({ name: stringOf(name), fn })
  }

  // ---- a run
  let finished = false
  const finish = (result) => {
    if (finished) return
    finished = true
    send("done", jsonStringify(result))
  }
  const failed = (error) => ({ _tag: "Failed", error: errorText(error) })
  const valueJson = (value) => {
    if (value === undefined) return undefined
    try {
      return jsonStringify(value, (_key, v) => {
        const array = asBytes(v)
        if (array !== undefined) return `<${array.length} bytes>`
        if (typeof v === "bigint") return stringOf(v)
        // A call to a host module not awaited: JSON would show it as {}, hiding the mistake.
        if (v instanceof PromiseCtor) return "<a Promise, not its value: await the call that made it>"
        return v
      })
    } catch {
      return jsonStringify(describe(value))
    }
  }
  const runTests = async () => {
    const results = []
    for (let i = 0; i < tests.length; i++) {
      const { name, fn } = tests[i]
      try {
        await fn()
        results.push({ name, ok: true })
      } catch (error) {
        results.push({ name, ok: false, error: errorText(error) })
      }
    }
    return results
  }

  /**
   * Why a script cannot load `specifier`, worded as the check on its imports words it: the env:
   * module of the same name first (`require("node:fs")` is after what `env:fs` gives), then all of them.
   */
  const notLoadable = (specifier, table, modules) => {
    const bare = specifier.startsWith("node:") ? specifier.slice(5) : specifier
    const hint = apply(mapHas, table, [bare]) ? `; did you mean require("env:${bare}")?` : ""
    return `scripts load only env: modules (import them, or require("env:<name>")), not ${jsonStringify(specifier)}${hint} ` +
      `(the modules: ${modules.join(", ")}; see /skills/imports.md)`
  }

  /** Runs the compiled script `body(exports, require, module)`; `modules` lists the env: modules it may import. */
  const start = (body, path, mode, argsJson, modulesJson) => {
    scriptPath = path
    try {
      const table = new MapCtor()
      for (const spec of jsonParse(modulesJson)) apply(mapSet, table, [spec.name, spec])
      const loaded = new MapCtor()
      const modules = []
      for (const [name] of table) modules.push(`env:${name}`)
      if (mode === "test") apply(mapSet, loaded, ["test", freeze({ __proto__: null, test, assert })])
      const load = (spec) => {
        if (spec.kind === "pure") {
          const exports = send("pure", spec.name)
          if (typeof exports === "string") throw new ErrorCtor(exports)
          return exports
        }
        // A host module that cannot serve (its MCP server not reached) says why when it is loaded.
        if (typeof spec.unavailable === "string") throw new ErrorCtor(spec.unavailable)
        const object = { __proto__: null }
        for (const fn of spec.exports) object[fn] = hostFunction(spec.name, fn)
        return freeze(object)
      }
      const require = (specifier) => {
        const name = typeof specifier === "string" && specifier.startsWith("env:") ? specifier.slice(4) : undefined
        if (name !== undefined && apply(mapHas, loaded, [name])) return apply(mapGet, loaded, [name])
        if (name === undefined || !apply(mapHas, table, [name])) throw new ErrorCtor(notLoadable(stringOf(specifier), table, modules))
        const module = load(apply(mapGet, table, [name]))
        apply(mapSet, loaded, [name, module])
        return module
      }
      const module = { exports: {} }
      apply(body, module.exports, [module.exports, require, module])
      if (mode === "test") {
        apply(promiseThen, runTests(), [(results) => finish({ _tag: "Tests", results }), (error) => finish(failed(error))])
        return
      }
      const main = module.exports.default
      if (typeof main !== "function") {
        finish({ _tag: "Failed", error: `${path} does not export a function as default: write export default async function (args) { ... }` })
        return
      }
      const args = jsonParse(argsJson)
      const value = main(args)
      // A value (not a promise) is the answer now, before any callback the script queued runs.
      if (value === null || (typeof value !== "object" && typeof value !== "function") || typeof value.then !== "function") {
        finish({ _tag: "Completed", value: valueJson(value) })
        return
      }
      apply(promiseThen, new PromiseCtor((resolve) => resolve(value)), [
        (value) => finish({ _tag: "Completed", value: valueJson(value) }),
        (error) => finish(failed(error))
      ])
    } catch (error) {
      finish(failed(error))
    }
  }

  const deliver = (id, ok, json, bytes) => {
    const call = apply(mapGet, pending, [id])
    if (call === undefined) return
    apply(mapDelete, pending, [id])
    if (ok) {
      let value
      try {
        value = decode(json, bytes)
      } catch {
        call.reject(new ErrorCtor(`${call.site.message}: the host's answer is not readable`))
        return
      }
      call.resolve(value)
      return
    }
    const error = new ErrorCtor(`${call.site.message}: ${json}`)
    const frames = typeof call.site.stack === "string" ? call.site.stack.slice(call.site.stack.indexOf("\n")) : ""
    error.stack = `Error: ${error.message}${frames.startsWith("\n") ? frames : ""}`
    call.reject(error)
  }

  const fire = (id) => {
    const timer = apply(mapGet, timers, [id])
    if (timer === undefined) return
    apply(mapDelete, timers, [id])
    try {
      apply(timer.callback, undefined, timer.args)
    } catch (error) {
      finish(failed(error))
    }
  }

  return freeze({ __proto__: null, start, deliver, fire, describe })
})
