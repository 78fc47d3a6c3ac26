import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import vm from "node:vm"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ScriptRunnerLive } from "../../../src/environments/script/ScriptRunner.js"
import { fakeHost, runIn, scriptRun } from "./scripts.js"

/**
 * What an escape does with what it got: Node's `process` (or its `fs`) writes a marker file on the
 * host, so "without effect" is a file that is not there.
 */
const escapeWith = (markers: string) => `
const escape = (name, got) => {
  if (got !== null && (typeof got === "object" || typeof got === "function")) {
    const fs = typeof got.getBuiltinModule === "function" ? got.getBuiltinModule("fs") : typeof got.writeFileSync === "function" ? got : undefined
    if (fs !== undefined) {
      fs.writeFileSync(${JSON.stringify(markers)} + "/" + name, "escaped")
      return "ESCAPED"
    }
  }
  return got === null ? "got null" : "got " + typeof got
}
`

const attempts = `
const attempts = {
  process: () => process,
  globalProcess: () => globalThis.process,
  // Names computed as it runs: a written require("fs") is refused before the script is saved.
  require: () => require(String("fs")),
  requireNode: () => require(String("node:fs")),
  fetch: () => fetch("http://127.0.0.1:9/"),
  buffer: () => Buffer.from("x"),
  evalImport: () => eval('import("node:fs")'),
  functionImport: () => new Function('return import("node:fs")')(),
  importError: async () => { try { await eval('import("node:fs")') } catch (e) { return e.constructor.constructor("return process")() } },
  globalConstructor: () => globalThis.constructor.constructor("return process")(),
  globalProto: () => Object.getPrototypeOf(globalThis).constructor.constructor("return process")(),
  hostFunction: () => readFile.constructor.constructor("return process")(),
  hostPromise: () => readFile("/inbox/b.bin").constructor.constructor("return process")(),
  consoleLog: () => console.log.constructor.constructor("return process")(),
  consoleObject: () => console.constructor.constructor("return process")(),
  timers: () => setTimeout.constructor.constructor("return process")(),
  encoder: () => new TextEncoder().encode("x").constructor.constructor("return process")(),
  hostError: async () => { try { await readFile("/none") } catch (e) { return e.constructor.constructor("return process")() } },
  hostRefusal: async () => { try { await refuse("/std/x") } catch (e) { return e.constructor.constructor("return process")() } },
  hostValue: async () => { const v = await readFile("/inbox/object"); return v.list.constructor.constructor("return process")() },
  hostValueProto: async () => { const v = await readFile("/inbox/object"); return Object.getPrototypeOf(v).constructor.constructor("return process")() },
  hostBytes: async () => (await readFile("/inbox/b.bin")).constructor.constructor("return process")(),
  hostBytesBuffer: async () => (await readFile("/inbox/b.bin")).buffer.constructor.constructor("return process")(),
  prepareStackTrace: () => { Error.prepareStackTrace = (_e, frames) => frames; return new Error("x").stack },
  callerOfTimer: () => new Promise((resolve) => setTimeout(new Function("resolve", "return function () { resolve(arguments.callee.caller) }")(resolve), 0)),
  // Overflows the stack at every depth near its end, so some call lands inside a host function,
  // whose own realm's RangeError must not come through.
  stackOverflow: () => {
    const caught = []
    const probes = [() => console.log(""), () => setTimeout(() => {}, 0), (a) => console.log("", a), () => clearTimeout(1)]
    for (const probe of probes) {
      for (let pad = 0; pad < 4; pad++) {
        const deep = (x1, x2, x3) => {
          try { deep(x1, x2, x3) } catch {}
          try { pad === 0 ? probe() : pad === 1 ? probe(1) : pad === 2 ? [0].forEach(() => probe()) : probe(...[1, 2]) } catch (e) { caught.push(e) }
        }
        deep(1, 2, 3)
      }
    }
    const foreign = caught.find((e) => !(e instanceof Error))
    return foreign === undefined ? undefined : foreign.constructor.constructor("return process")()
  },
  // Reads a stack near the stack's end, so that the host's stack formatting overflows and throws
  // a RangeError of its own realm, whose constructor's constructor is the host's Function.
  stackFormatting: () => {
    for (let pad = 0; pad < 400; pad++) {
      let foreign
      const padding = new Array(pad % 50).fill(0)
      const deep = (...a) => {
        try { deep(...padding) } catch {}
        try { new Error("x").stack } catch (e) { if (foreign === undefined && e !== null && typeof e === "object" && !(e instanceof Error)) foreign = e }
      }
      const shift = (k) => k > 0 ? shift(k - 1) : deep()
      shift(Math.floor(pad / 50) * 7)
      if (foreign !== undefined) return foreign.constructor.constructor("return process")()
    }
    return undefined
  }
}
`

const attacker = (markers: string) => `import { readFile, refuse } from "env:fs"
${escapeWith(markers)}
${attempts}
export default async function () {
  const outcomes = {}
  for (const [name, attempt] of Object.entries(attempts)) {
    try {
      outcomes[name] = escape(name, await attempt())
    } catch (error) {
      outcomes[name] = "blocked: " + (error instanceof Error ? error.constructor.name + ": " + error.message : String(error))
    }
  }
  return outcomes
}
`

const withMarkers = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "foundry-sandbox-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

describe("the script sandbox", () => {
  it.scopedLive("holds nothing of the host: every way out fails without effect", () =>
    Effect.gen(function*() {
      const markers = yield* withMarkers
      const { host } = fakeHost(new Map<string, Uint8Array | string>([["/inbox/b.bin", new Uint8Array([1, 2, 3])]]))
      const withObject = {
        call: (module: string, fn: string, args: ReadonlyArray<unknown>) =>
          args[0] === "/inbox/object" ? Promise.resolve({ list: [1, 2], nested: { a: "b" } }) : host.call(module, fn, args)
      }
      const result = yield* runIn("p", scriptRun("/scripts/escape.js", attacker(markers), { timeoutMs: 20_000, maxOutputBytes: 100 }), withObject)
      expect(result._tag).toBe("Completed")
      if (result._tag !== "Completed") return
      const outcomes = result.value
      expect(typeof outcomes === "object" && outcomes !== null ? Object.keys(outcomes).length : 0).toBe(27)
      for (const [name, outcome] of Object.entries(outcomes ?? {})) {
        expect([name, outcome]).toEqual([name, expect.stringMatching(/^(blocked: |got (undefined|null)$)/)])
        expect([name, outcome]).not.toEqual([name, "ESCAPED"])
      }
      expect(readdirSync(markers)).toEqual([])
      expect(outcomes).toMatchObject({
        process: "blocked: ReferenceError: process is not defined",
        require: expect.stringContaining("scripts load only env: modules"),
        fetch: "blocked: ReferenceError: fetch is not defined",
        buffer: "blocked: ReferenceError: Buffer is not defined",
        evalImport: expect.stringContaining("scripts cannot import()"),
        importError: "blocked: ReferenceError: process is not defined",
        globalConstructor: "blocked: ReferenceError: process is not defined",
        hostFunction: "blocked: ReferenceError: process is not defined",
        hostError: "blocked: ReferenceError: process is not defined",
        hostRefusal: "blocked: ReferenceError: process is not defined",
        hostValue: "blocked: ReferenceError: process is not defined",
        hostBytes: "blocked: ReferenceError: process is not defined",
        hostBytesBuffer: "blocked: ReferenceError: process is not defined",
        prepareStackTrace: expect.stringContaining("blocked: TypeError"),
        callerOfTimer: "got null",
        stackOverflow: "got undefined"
      })
    }).pipe(Effect.provide(ScriptRunnerLive())))

  it.scopedLive("the same escapes work against a context that leaks the host (the check above is real)", () =>
    Effect.gen(function*() {
      const markers = yield* withMarkers
      const naive = vm.createContext({})
      vm.runInContext(`${escapeWith(markers)}\nescape("globalConstructor", globalThis.constructor.constructor("return process")())`, naive)
      expect(existsSync(join(markers, "globalConstructor"))).toBe(true)
    }))

  it.live("gives a script only the language's own globals and the few the sandbox builds", () =>
    Effect.gen(function*() {
      const result = yield* runIn("p", scriptRun("/scripts/globals.js", `export default () => Object.getOwnPropertyNames(globalThis).filter((name) => /^[a-z]/.test(name)).sort()`))
      expect(result._tag === "Completed" ? result.value : result).toEqual([
        "atob", "btoa", "clearTimeout", "console", "decodeURI", "decodeURIComponent", "encodeURI", "encodeURIComponent", "escape", "eval", "globalThis",
        "isFinite", "isNaN", "parseFloat", "parseInt", "queueMicrotask", "setTimeout", "undefined", "unescape"
      ])
    }).pipe(Effect.provide(ScriptRunnerLive())))

  it.live("never hands a script the stack frames, whatever it puts in place of Error, and no host path reaches it", () =>
    Effect.gen(function*() {
      const { host } = fakeHost()
      const result = yield* runIn("p", scriptRun("/scripts/frames.js", `import { readFile } from "env:fs"
export default async function () {
  const E = Error
  const captured = []
  const fake = { prepareStackTrace: (_error, frames) => { captured.push(frames); return "fake" } }
  const attempts = {
    assign: () => { globalThis.Error = fake },
    sloppy: () => new Function("fake", "Error = fake; globalThis.Error = fake; return typeof Error")(fake),
    define: () => Object.defineProperty(globalThis, "Error", { value: fake }),
    reflect: () => Reflect.set(globalThis, "Error", fake),
    deleted: () => new Function("fake", "delete globalThis.Error; globalThis.Error = fake; return typeof Error")(fake),
    prototype: () => { Object.setPrototypeOf(globalThis, { Error: fake }); return typeof Error },
    onTheRealOne: () => { E.prepareStackTrace = fake.prepareStackTrace }
  }
  const outcomes = {}
  for (const [name, attempt] of Object.entries(attempts)) {
    try { outcomes[name] = String(attempt()) } catch (error) { outcomes[name] = "blocked: " + error.message }
  }
  const stackOf = (f) => { try { f() } catch (error) { return String(error.stack) } }
  const deep = () => deep()
  const stacks = {
    made: new E("made").stack,
    thrown: stackOf(() => null.x),
    overflow: stackOf(deep),
    captured: (() => { const o = {}; E.captureStackTrace(o); return o.stack })(),
    host: await readFile("/none").catch((error) => error.stack),
    importRefused: await eval('import("node:fs")').catch((error) => error.stack),
    timer: await new Promise((resolve) => setTimeout(() => resolve(stackOf(() => { throw new TypeError("in a timer") })), 1))
  }
  return { captured: captured.length, same: Error === E, outcomes, stacks }
}`), host)
      expect(result._tag).toBe("Completed")
      if (result._tag !== "Completed") return
      expect(result.value).toMatchObject({ captured: 0, same: true, stacks: { made: expect.stringContaining("/scripts/frames.js:") } })
      const seen = JSON.stringify(result.value)
      for (const host of ["sandboxWorker", "node:internal", "/work/", "file://", "foundry:sandbox"]) expect(seen).not.toContain(host)
      const failed = yield* runIn("p", scriptRun("/scripts/throws.js", `export default () => { new Function("Error = { prepareStackTrace: () => 'fake' }")(); throw new Error("boom") }`))
      expect(failed).toMatchObject({ _tag: "Failed", error: expect.stringMatching(/^Error: boom\n    at .*\/scripts\/throws.js:1:/) })
    }).pipe(Effect.provide(ScriptRunnerLive())))

  it.live("gives scripts atob and btoa, and URLSearchParams, as the web has them", () =>
    Effect.gen(function*() {
      const latin1 = Array.from({ length: 256 }, (_, i) => String.fromCharCode(i)).join("")
      const result = yield* runIn("p", scriptRun("/scripts/web.js", `export default (latin1) => {
  const refused = (f) => { try { return f() } catch (error) { return error.name + ": " + error.message } }
  const params = new URLSearchParams("?a=1&b=x+y&c=%C3%A9%F0%9F%98%80&a=2&empty&=v&bad=%zz")
  const built = new URLSearchParams({ q: "a b&c=d/é", n: 1 })
  built.append("list", "1")
  built.append("list", "2")
  const sorted = new URLSearchParams([["z", "1"], ["a", "2"], ["z", "0"]])
  sorted.sort()
  const edited = new URLSearchParams("a=1&b=2&a=3")
  edited.set("a", "9")
  edited.delete("b")
  return {
    hello: btoa("hello"),
    back: atob(" aGVs bG8= "),
    unpadded: atob("aGVsbG8"),
    all: btoa(latin1),
    roundTrip: atob(btoa(latin1)) === latin1,
    wide: refused(() => btoa("😀")),
    notBase64: refused(() => atob("a")),
    params: [params.get("a"), params.getAll("a"), params.get("b"), params.get("c"), params.get("empty"), params.get(""), params.get("bad"), params.get("none"), params.has("b"), params.size],
    parsed: params.toString(),
    built: built.toString(),
    entries: [...built],
    sorted: sorted.toString(),
    edited: edited.toString()
  }
}`, { args: latin1 }))
      const params = new URLSearchParams("?a=1&b=x+y&c=%C3%A9%F0%9F%98%80&a=2&empty&=v&bad=%zz")
      const built = new URLSearchParams({ q: "a b&c=d/é", n: "1" })
      built.append("list", "1")
      built.append("list", "2")
      expect(result._tag === "Completed" ? result.value : result).toEqual({
        hello: "aGVsbG8=",
        back: "hello",
        unpadded: "hello",
        all: Buffer.from(latin1, "latin1").toString("base64"),
        roundTrip: true,
        wide: expect.stringContaining("InvalidCharacterError"),
        notBase64: expect.stringContaining("InvalidCharacterError"),
        params: [params.get("a"), params.getAll("a"), params.get("b"), params.get("c"), params.get("empty"), params.get(""), params.get("bad"), null, true, params.size],
        parsed: params.toString(),
        built: built.toString(),
        entries: [...built],
        sorted: "a=2&z=1&z=0",
        edited: "a=9"
      })
    }).pipe(Effect.provide(ScriptRunnerLive())))
})
