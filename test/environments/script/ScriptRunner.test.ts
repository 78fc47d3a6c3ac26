import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Scope } from "effect"
import type { ScriptHost, ScriptModule } from "../../../src/environments/script/scriptRun.js"
import { ScriptRunner, ScriptRunnerLive } from "../../../src/environments/script/ScriptRunner.js"
import { captureCeilingBytes } from "../../../src/environments/script/ScriptWorker.js"
import { fakeHost, runIn, scriptRun } from "./scripts.js"

const workers = Effect.flatMap(ScriptRunner, (runner) => runner.workers)

describe("ScriptRunner", () => {
  it.live("runs a script's default export with its args and answers its JSON value", () =>
    Effect.gen(function*() {
      const result = yield* runIn("p", scriptRun("/scripts/add.ts", `
interface Args { readonly a: number; readonly b: number }
export default async function (args: Args) {
  return { sum: args.a + args.b, when: new Date(0), big: 2n, nothing: undefined }
}`, { args: { a: 2, b: 3 } }))
      expect(result).toEqual({ _tag: "Completed", value: { sum: 5, when: "1970-01-01T00:00:00.000Z", big: "2" }, output: "", outputBytes: 0 })
    }).pipe(Effect.provide(ScriptRunnerLive())))

  it.live("round-trips host calls: strings, bytes both ways, and failures as readable rejections", () =>
    Effect.gen(function*() {
      const { host, calls, files } = fakeHost(new Map<string, Uint8Array | string>([["/inbox/a.txt", "héllo"], ["/inbox/b.bin", new Uint8Array([0, 1, 255, 128])]]))
      const result = yield* runIn("p", scriptRun("/scripts/io.js", `
import { readFile, readText, writeFile, refuse, nothing } from "env:fs"
export default async function () {
  const text = await readText("/inbox/a.txt")
  const bytes = await readFile("/inbox/b.bin")
  await writeFile("/tmp/copy.bin", bytes.map((b) => 255 - b))
  await writeFile("/tmp/nested.json", { name: "n", payload: new TextEncoder().encode("é") })
  let missing, refused
  try { await readText("/inbox/none.txt") } catch (e) { missing = [e instanceof Error, e.message] }
  try { await refuse("/std/x") } catch (e) { refused = e.message }
  const written = await writeFile("/tmp/x.txt", "x")
  return { text, bytes: [bytes instanceof Uint8Array, ...bytes], missing, refused, written, nothing: typeof (await nothing("/x")) }
}`), host)
      expect(result._tag === "Completed" ? result.value : result).toEqual({
        text: "héllo",
        bytes: [true, 0, 1, 255, 128],
        missing: [true, "env:fs readText: /inbox/none.txt does not exist"],
        refused: "env:fs refuse: /std/x is read-only",
        written: { written: "/tmp/x.txt" },
        nothing: "undefined"
      })
      expect(files.get("/tmp/copy.bin")).toEqual(new Uint8Array([255, 254, 0, 127]))
      expect(calls.find((call) => call.fn === "writeFile" && call.args[0] === "/tmp/nested.json")?.args[1])
        .toEqual({ name: "n", payload: new Uint8Array([0xc3, 0xa9]) })
    }).pipe(Effect.provide(ScriptRunnerLive())))

  it.live("captures console output and counts all of it, keeping four times the shown limit unless told how much", () =>
    Effect.gen(function*() {
      const small = yield* runIn("p", scriptRun("/scripts/log.js", `
export default function () {
  console.log("rows:", 3, { a: [1, "x"] })
  console.error("warn")
}`))
      const expected = `rows: 3 { a: [ 1, "x" ] }\nwarn\n`
      expect(small).toMatchObject({ _tag: "Completed", output: expected, outputBytes: Buffer.byteLength(expected) })
      const big = yield* runIn("p", scriptRun("/scripts/flood.js", `
export default function () {
  for (let i = 0; i < 1000; i++) console.log("é".repeat(99))
}`, { maxOutputBytes: 1000 }))
      expect(big.outputBytes).toBe(1000 * 199)
      expect(Buffer.byteLength(big.output)).toBeLessThanOrEqual(4000)
      expect(big.output.startsWith("é".repeat(99))).toBe(true)
    }).pipe(Effect.provide(ScriptRunnerLive())))

  it.live("keeps maxCapturedBytes of the output (at most 2 MB) whether the script completes, fails or times out", () =>
    Effect.gen(function*() {
      const line = "x".repeat(99)
      const flood = (lines: number, end: string) => `export default function () {\n  for (let i = 0; i < ${lines}; i++) console.log("${line}")\n  ${end}\n}`
      const completed = yield* runIn("p", scriptRun("/scripts/flood.js", flood(500, ""), { maxOutputBytes: 100, maxCapturedBytes: 100_000 }))
      expect(completed).toMatchObject({ _tag: "Completed", outputBytes: 50_000 })
      expect(completed.output).toBe(`${line}\n`.repeat(500))
      const failed = yield* runIn("p", scriptRun("/scripts/flood.js", flood(500, `throw new Error("late")`), { maxOutputBytes: 100, maxCapturedBytes: 100_000 }))
      expect(failed).toMatchObject({ _tag: "Failed", outputBytes: 50_000, output: `${line}\n`.repeat(500) })
      const timedOut = yield* runIn("p", scriptRun("/scripts/flood.js", flood(500, "while (true) {}"), { maxOutputBytes: 100, maxCapturedBytes: 100_000, timeoutMs: 500 }))
      expect(timedOut).toMatchObject({ _tag: "TimedOut", outputBytes: 50_000, output: `${line}\n`.repeat(500) })
      const huge = yield* runIn("p", scriptRun("/scripts/flood.js", flood(30_000, ""), { maxOutputBytes: 100, maxCapturedBytes: 10_000_000 }))
      expect(huge.outputBytes).toBe(3_000_000)
      expect(Buffer.byteLength(huge.output)).toBe(captureCeilingBytes)
    }).pipe(Effect.provide(ScriptRunnerLive())))

  it.live("fails with the error and the script's own line in the source", () =>
    Effect.gen(function*() {
      const result = yield* runIn("p", scriptRun("/scripts/broken.ts", `type Row = { readonly n: number }

const total = (rows: ReadonlyArray<Row>): number =>
  rows.reduce((sum, row) => sum + row.n, 0)

export default async function () {
  const rows: Array<Row> = [{ n: 1 }]
  console.log("total", total(rows))
  throw new TypeError("no rows for " + total(rows))
}`))
      expect(result._tag).toBe("Failed")
      if (result._tag !== "Failed") return
      expect(result.error.split("\n")[0]).toBe("TypeError: no rows for 1")
      expect(result.error).toContain("/scripts/broken.ts:9:9")
      expect(result.error).not.toContain("foundry:sandbox")
      expect(result.output).toBe("total 1\n")
    }).pipe(Effect.provide(ScriptRunnerLive())))

  it.live("stops a script at its wall clock, replaces the worker, and keeps the output so far", () =>
    Effect.gen(function*() {
      const started = Date.now()
      const stuck = yield* runIn("p", scriptRun("/scripts/spin.js", `export default function () { console.log("before"); while (true) {} }`, { timeoutMs: 300 }))
      expect(stuck).toMatchObject({ _tag: "TimedOut", output: "before\n", outputBytes: 7 })
      expect(Date.now() - started).toBeLessThan(5_000)
      expect(yield* workers).toBe(0)
      const next = yield* runIn("p", scriptRun("/scripts/ok.js", `export default () => "fine"`))
      expect(next).toMatchObject({ _tag: "Completed", value: "fine" })
      expect(yield* workers).toBe(1)
    }).pipe(Effect.provide(ScriptRunnerLive())))

  it.live("stops a script whose promise never settles, and one awaiting a host call that never answers", () =>
    Effect.gen(function*() {
      const never: ScriptHost = { call: () => new Promise(() => {}) }
      const waiting = yield* runIn("p", scriptRun("/scripts/wait.js", `import { readFile } from "env:fs"\nexport default () => readFile("/x")`, { timeoutMs: 200 }), never)
      expect(waiting._tag).toBe("TimedOut")
      const pending = yield* runIn("p", scriptRun("/scripts/pending.js", `export default () => new Promise(() => {})`, { timeoutMs: 200 }))
      expect(pending._tag).toBe("TimedOut")
      expect(yield* workers).toBe(0)
    }).pipe(Effect.provide(ScriptRunnerLive())))

  it.live("says how much of its memory a script stopped at its wall clock held", () =>
    Effect.gen(function*() {
      const holding = yield* runIn("p", scriptRun("/scripts/holds.js", `export default async () => { const data = new Uint8Array(40 * 1024 * 1024).fill(1); await new Promise(() => {}); return data.length }`, { timeoutMs: 1_000 }))
      expect(holding).toMatchObject({ _tag: "TimedOut", memory: { limitMb: 64 } })
      const used = holding._tag === "TimedOut" ? holding.memory?.usedMb ?? 0 : 0
      expect(used).toBeGreaterThanOrEqual(40)
      expect(used).toBeLessThan(48)
    }).pipe(Effect.provide(ScriptRunnerLive({ maxMemoryMb: 64 }))), 30_000)

  it.live("gives a script that runs out of heap a failure, and the next run a fresh worker", () =>
    Effect.gen(function*() {
      const hungry = yield* runIn("p", scriptRun("/scripts/hog.js", `export default () => { const all = []; while (true) all.push(new Array(100000).fill(Math.random())) }`, { timeoutMs: 30_000 }))
      expect(hungry).toMatchObject({ _tag: "OutOfMemory", limitMb: 64 })
      expect(yield* workers).toBe(0)
      const next = yield* runIn("p", scriptRun("/scripts/ok.js", `export default () => 1`))
      expect(next).toMatchObject({ _tag: "Completed", value: 1 })
      expect(yield* workers).toBe(1)
    }).pipe(Effect.provide(ScriptRunnerLive({ maxMemoryMb: 64 }))), 60_000)

  it.live("runs a key's scripts one after another in the order they came, on threads shared with other keys", () =>
    Effect.gen(function*() {
      const order: Array<string> = []
      const log: ScriptModule = { name: "log", exports: ["mark"], kind: "host" }
      const host: ScriptHost = {
        call: (_module, _fn, args) => {
          order.push(String(args[0]))
          return new Promise((resolve) => setTimeout(() => resolve(null), args[0] === "a:start" ? 150 : 0))
        }
      }
      const script = (name: string) =>
        scriptRun(`/scripts/${name}.js`, `import { mark } from "env:log"\nexport default async () => { await mark("${name}:start"); await mark("${name}:end") }`, { modules: [log] })
      yield* Effect.all([runIn("p", script("a"), host), runIn("p", script("b"), host), runIn("p", script("c"), host)], { concurrency: "unbounded" })
      expect(order).toEqual(["a:start", "a:end", "b:start", "b:end", "c:start", "c:end"])
      expect(yield* workers).toBe(1)
      yield* runIn("q", script("d"), host)
      expect(yield* workers).toBe(1)
    }).pipe(Effect.provide(ScriptRunnerLive())))

  it.live("a run that stops waiting for its turn lets the next one go only after the run before it", () =>
    Effect.gen(function*() {
      const slow = scriptRun("/scripts/slow.js", `export default () => new Promise((resolve) => setTimeout(() => resolve("a"), 300))`)
      const started = Date.now()
      const first = yield* Effect.fork(runIn("p", slow))
      yield* Effect.sleep("20 millis")
      const second = yield* Effect.fork(runIn("p", scriptRun("/scripts/b.js", `export default () => "b"`)))
      yield* Effect.sleep("20 millis")
      const third = yield* Effect.fork(runIn("p", scriptRun("/scripts/c.js", `export default () => Date.now()`)))
      yield* Effect.sleep("20 millis")
      yield* Fiber.interrupt(second)
      const c = yield* Fiber.join(third)
      expect(c._tag === "Completed" && typeof c.value === "number" ? c.value - started : 0).toBeGreaterThanOrEqual(280)
      expect(yield* Fiber.join(first)).toMatchObject({ _tag: "Completed", value: "a" })
    }).pipe(Effect.provide(ScriptRunnerLive())))

  it.live("terminates a worker once it has been idle for idleMs", () =>
    Effect.gen(function*() {
      const wait = scriptRun("/scripts/wait.js", `export default () => new Promise((resolve) => setTimeout(resolve, 50))`)
      // idleMs leaves room for one thread to start much later than the other on a loaded machine:
      // at 200 ms the first one idle was sometimes ended before the second run had answered.
      const both = yield* Effect.all([runIn("p", wait), runIn("q", wait)], { concurrency: "unbounded" })
      expect(both).toMatchObject([{ _tag: "Completed" }, { _tag: "Completed" }])
      expect(yield* workers).toBe(2)
      yield* Effect.sleep("2500 millis")
      expect(yield* workers).toBe(0)
      const again = yield* runIn("p", scriptRun("/scripts/ok.js", `export default () => 2`))
      expect(again).toMatchObject({ _tag: "Completed", value: 2 })
      expect(yield* workers).toBe(1)
    }).pipe(Effect.provide(ScriptRunnerLive({ idleMs: 1500 }))))

  it.live("terminates every worker when the layer's scope closes", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(ScriptRunnerLive(), scope)
      const run = (pool: string) => runIn(pool, scriptRun("/scripts/wait.js", `export default () => new Promise((resolve) => setTimeout(resolve, 50))`)).pipe(Effect.provide(context))
      yield* Effect.all([run("p"), run("q")], { concurrency: "unbounded" })
      expect(yield* workers.pipe(Effect.provide(context))).toBe(2)
      yield* Scope.close(scope, Exit.void)
      expect(yield* workers.pipe(Effect.provide(context))).toBe(0)
    }))

  it.live("runs a test file's tests and reports each by name", () =>
    Effect.gen(function*() {
      const result = yield* runIn("p", scriptRun("/scripts/sum.test.ts", `import { test, assert } from "env:test"

const sum = (xs: Array<number>) => xs.reduce((a, b) => a + b, 0)

test("adds", () => assert.equal(sum([1, 2]), 3))
test("deep", async () => assert.deepEqual({ a: [1, { b: new Uint8Array([1]) }] }, { a: [1, { b: new Uint8Array([1]) }] }))
test("wrong", () => assert.equal(sum([1, 2]), 4))
test("throws", () => { throw new Error("boom") })
test("asserts", () => assert(sum([]) > 0, "empty sums are positive"))
`, { mode: "test" }))
      expect(result._tag).toBe("Tests")
      if (result._tag !== "Tests") return
      expect(result.results.map(({ name, ok }) => [name, ok])).toEqual([["adds", true], ["deep", true], ["wrong", false], ["throws", false], ["asserts", false]])
      const [, , wrong, throws, asserts] = result.results
      expect(wrong?.error).toContain("AssertionError: expected 3 to equal 4")
      expect(wrong?.error).toContain("/scripts/sum.test.ts:7:")
      expect(throws?.error).toContain("Error: boom")
      expect(asserts?.error).toContain("empty sums are positive")
    }).pipe(Effect.provide(ScriptRunnerLive())))

  it.live("gives scripts timers and UTF-8 text encoding", () =>
    Effect.gen(function*() {
      const result = yield* runIn("p", scriptRun("/scripts/timers.js", `
export default async function () {
  const order = []
  const cancelled = setTimeout(() => order.push("cancelled"), 5)
  clearTimeout(cancelled)
  await new Promise((resolve) => setTimeout(() => { order.push("timer"); resolve() }, 20))
  queueMicrotask(() => order.push("microtask"))
  await null
  const text = "a é 😀"
  const bytes = new TextEncoder().encode(text)
  return { order, bytes: bytes.length, back: new TextDecoder().decode(bytes) === text }
}`))
      expect(result).toMatchObject({ _tag: "Completed", value: { order: ["timer", "microtask"], bytes: 9, back: true } })
    }).pipe(Effect.provide(ScriptRunnerLive())))

  // Told by the work it skips, not by a time limit (which a loaded machine misses): the first run
  // starts the worker thread, the next ones reuse it, so each takes a fraction of the first.
  it.live("runs the scripts after the first on the same warm worker, each in a fraction of the first's time", () =>
    Effect.gen(function*() {
      const runner = yield* ScriptRunner
      const run = scriptRun("/scripts/ok.js", `export default () => 1`)
      const coldStarted = performance.now()
      yield* runIn("p", run)
      const coldMs = performance.now() - coldStarted
      const warmStarted = performance.now()
      for (let i = 0; i < 20; i++) yield* runIn("p", run)
      const warmMs = (performance.now() - warmStarted) / 20
      expect(yield* runner.workers).toBe(1)
      expect(warmMs).toBeLessThan(coldMs / 2)
    }).pipe(Effect.provide(ScriptRunnerLive())))
})
