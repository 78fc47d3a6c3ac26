import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Option, Schedule } from "effect"
import type { ScriptHost, ScriptModule } from "../../../src/environments/script/scriptRun.js"
import { ScriptRunner, ScriptRunnerLive } from "../../../src/environments/script/ScriptRunner.js"
import { makeWorkerPool } from "../../../src/environments/script/WorkerPool.js"
import { fakeHost, runIn, scriptRun } from "./scripts.js"

const workers = Effect.flatMap(ScriptRunner, (runner) => runner.workers)

/** Runs `effect` while sampling `sample` every few milliseconds: its value and the highest sample seen. */
const sampling = <A, E, R>(effect: Effect.Effect<A, E, R>, sample: Effect.Effect<number, never, ScriptRunner>) =>
  Effect.gen(function*() {
    let highest = yield* sample
    const sampler = yield* Effect.fork(Effect.forever(Effect.zipRight(Effect.sleep("5 millis"), Effect.tap(sample, (n) => Effect.sync(() => highest = Math.max(highest, n))))))
    const value = yield* effect
    yield* Fiber.interrupt(sampler)
    return { value, highest: Math.max(highest, yield* sample) }
  })

const rss = Effect.sync(() => process.memoryUsage.rss())

describe("the shared worker pool", () => {
  it.live("runs any number of keys on at most maxWorkers threads, each key in order, and ends them when idle", () =>
    Effect.gen(function*() {
      const keys = Array.from({ length: 20 }, (_, i) => `instance-${i}`)
      const echo = (key: string, step: number) =>
        scriptRun("/scripts/echo.js", `export default async (args) => { await new Promise((resolve) => setTimeout(resolve, 10)); globalThis.seen = (globalThis.seen ?? 0) + 1; return { ...args, seen: globalThis.seen } }`, { args: { key, step } })

      const sequential = yield* sampling(Effect.forEach(keys, (key) => runIn(key, echo(key, 0))), workers)
      expect(sequential.value.map((result) => result._tag === "Completed" ? result.value : result)).toEqual(keys.map((key) => ({ key, step: 0, seen: 1 })))
      // One run at a time: the thread freed by one is the next one's.
      expect(sequential.highest).toBe(1)

      const order: Array<string> = []
      const log: ScriptModule = { name: "log", exports: ["mark"], kind: "host" }
      const host: ScriptHost = {
        call: (_module, _fn, args) => {
          order.push(String(args[0]))
          return new Promise((resolve) => setTimeout(() => resolve(null), 5))
        }
      }
      const marked = (key: string, step: number) =>
        scriptRun("/scripts/mark.js", `import { mark } from "env:log"\nexport default async (args) => { await mark(args.key + ":" + args.step); return args }`, { args: { key, step }, modules: [log] })
      const concurrent = yield* sampling(
        Effect.all(keys.flatMap((key) => [0, 1, 2].map((step) => runIn(key, marked(key, step), host))), { concurrency: "unbounded" }),
        workers
      )
      expect(concurrent.value.map((result) => result._tag === "Completed" ? result.value : result)).toEqual(keys.flatMap((key) => [0, 1, 2].map((step) => ({ key, step }))))
      expect(concurrent.highest).toBeLessThanOrEqual(3)
      expect(concurrent.highest).toBeGreaterThan(1)
      for (const key of keys) expect(order.filter((mark) => mark.startsWith(`${key}:`))).toEqual([`${key}:0`, `${key}:1`, `${key}:2`])

      yield* Effect.sleep("700 millis")
      expect(yield* workers).toBe(0)
      const again = yield* runIn("instance-0", echo("instance-0", 3))
      expect(again).toMatchObject({ _tag: "Completed", value: { key: "instance-0", step: 3, seen: 1 } })
    }).pipe(Effect.provide(ScriptRunnerLive({ workers: 3, maxWorkers: 3, idleMs: 300 }))), 30_000)

  it.live("answers a run that returns while code it left keeps spinning, and gives the next run a free thread", () =>
    Effect.gen(function*() {
      const leftovers = {
        microtask: `Promise.resolve().then(() => { while (true) {} })`,
        chain: `let p = Promise.resolve(); for (let i = 0; i < 10000; i++) p = p.then(() => i); p.then(() => { while (true) {} })`,
        afterAwait: `(async () => { await null; await null; for (;;) {} })()`,
        async: `let p = Promise.resolve(); for (let i = 0; i < 10000; i++) p = p.then(() => i); p.then(() => { while (true) {} })`
      }
      for (const [name, leftover] of Object.entries(leftovers)) {
        const started = Date.now()
        const body = `${leftover}; console.log("returning"); return "${name}"`
        const left = yield* runIn("p", scriptRun(`/scripts/${name}.js`, name === "async" ? `export default async () => { await null; ${body} }` : `export default () => { ${body} }`, { timeoutMs: 5_000 }))
        expect(left).toEqual({ _tag: "Completed", value: name, output: "returning\n", outputBytes: 10 })
        expect(Date.now() - started).toBeLessThan(1_000)
        const next = yield* runIn("p", scriptRun("/scripts/next.js", `export default () => "next"`, { timeoutMs: 5_000 }))
        expect(next).toMatchObject({ _tag: "Completed", value: "next" })
        expect(yield* workers).toBeLessThanOrEqual(1)
      }
    }).pipe(Effect.provide(ScriptRunnerLive({ workers: 1, maxWorkers: 1 }))), 30_000)

  it.live("gives a script no way to schedule code for after it returns: no finalizers, no waitAsync, WebAssembly compiled at once", () =>
    Effect.gen(function*() {
      const probe = yield* runIn("p", scriptRun("/scripts/probe.js", `export default () => [typeof FinalizationRegistry, typeof Atomics.waitAsync, typeof WebAssembly.compileStreaming, typeof WeakRef]`))
      expect(probe).toMatchObject({ _tag: "Completed", value: ["undefined", "undefined", "undefined", "function"] })
      // The smallest module: magic and version, and one that exports a function returning 42.
      const empty = "[0, 97, 115, 109, 1, 0, 0, 0]"
      const answer = "[0,97,115,109,1,0,0,0,1,5,1,96,0,1,127,3,2,1,0,7,5,1,1,102,0,0,10,6,1,4,0,65,42,11]"
      const wasm = yield* runIn("p", scriptRun("/scripts/wasm.js", `export default async () => {
  const module = await WebAssembly.compile(new Uint8Array(${empty}))
  const { instance } = await WebAssembly.instantiate(new Uint8Array(${answer}))
  const direct = await WebAssembly.instantiate(module)
  return [module instanceof WebAssembly.Module, instance.exports.f(), direct instanceof WebAssembly.Instance]
}`, { timeoutMs: 5_000 }))
      expect(wasm).toMatchObject({ _tag: "Completed", value: [true, 42, true] })
      // Compiled in the background, the module would call back in the next run's time.
      const left = yield* runIn("p", scriptRun("/scripts/wasm.js", `export default () => {
  WebAssembly.compile(new Uint8Array(${empty})).then(() => { const end = Date.now() + 3000; while (Date.now() < end) {} })
  return "returned"
}`, { timeoutMs: 5_000 }))
      expect(left).toMatchObject({ _tag: "Completed", value: "returned" })
      const next = yield* runIn("p", scriptRun("/scripts/next.js", `export default () => new Promise((resolve) => setTimeout(() => resolve("next"), 100))`, { timeoutMs: 1_000 }))
      expect(next).toMatchObject({ _tag: "Completed", value: "next" })
    }).pipe(Effect.provide(ScriptRunnerLive({ workers: 1, maxWorkers: 1 }))), 30_000)

  it.live("stops a script that fills memory outside its heap, before or after it returns, keeping the process's memory bounded", () =>
    Effect.gen(function*() {
      const before = yield* rss
      const hog = yield* sampling(
        runIn("p", scriptRun("/scripts/buffers.js", `export default () => {
  console.log("allocating")
  const buffers = []
  for (let i = 0; i < 40; i++) buffers.push(new Uint8Array(64e6).fill(1))
  return buffers.length
}`, { timeoutMs: 20_000 })),
        rss
      )
      expect(hog.value).toMatchObject({ _tag: "OutOfMemory", limitMb: 128, output: "allocating\n" })
      // Without the guard the script keeps 2.5 GB.
      expect(hog.highest - before).toBeLessThan(1024 * 1024 * 1024)
      expect(yield* workers).toBe(0)
      const next = yield* runIn("p", scriptRun("/scripts/small.js", `export default () => new Uint8Array(16e6).fill(1).length`))
      expect(next).toMatchObject({ _tag: "Completed", value: 16e6 })

      // The same, in code the script left running after it returned.
      const leaving = yield* sampling(
        Effect.zipLeft(
          runIn("p", scriptRun("/scripts/leaves.js", `export default () => {
  Promise.resolve().then(() => { const buffers = []; for (;;) buffers.push(new Uint8Array(64e6).fill(1)) })
  return "returned"
}`)),
          Effect.sleep("1500 millis")
        ),
        rss
      )
      expect(leaving.value).toMatchObject({ _tag: "Completed", value: "returned" })
      expect(leaving.highest - before).toBeLessThan(1024 * 1024 * 1024)
      const after = yield* runIn("p", scriptRun("/scripts/small.js", `export default () => new Uint8Array(16e6).fill(1).length`))
      expect(after).toMatchObject({ _tag: "Completed", value: 16e6 })
    }).pipe(Effect.provide(ScriptRunnerLive({ maxMemoryMb: 128 }))), 60_000)

  it.live("gives an instance with no script running a thread while other instances' scripts keep every worker busy, past the pool's size up to maxWorkers, then shrinks back", () =>
    Effect.gen(function*() {
      // Scripts that hold their thread until the test lets them go, without using the CPU.
      const gates = new Map<string, () => void>()
      const gate: ScriptModule = { name: "gate", exports: ["wait"], kind: "host" }
      const host: ScriptHost = { call: (_module, _fn, args) => new Promise((resolve) => gates.set(String(args[0]), () => resolve(null))) }
      const open = (name: string) => Effect.sync(() => gates.get(name)?.())
      const gated = (name: string) => scriptRun("/scripts/gated.js", `import { wait } from "env:gate"\nexport default async () => { await wait("${name}"); return "${name}" }`, { modules: [gate] })
      const quick = scriptRun("/scripts/quick.js", `export default () => "quick"`)
      const run = (scope: string, instance: string, script: typeof quick) => Effect.flatMap(ScriptRunner, (runner) => runner.run({ scope, instance }, script, host))
      const holding = (count: number) => Effect.repeat(Effect.sync(() => gates.size), { until: (size) => size >= count, schedule: Schedule.spaced("20 millis") })
      const stillWaiting = <A>(fiber: Fiber.RuntimeFiber<A>) => Effect.zipRight(Effect.sleep("500 millis"), Effect.map(Fiber.poll(fiber), Option.isNone))

      const t1 = yield* Effect.fork(run("t1", "t1", gated("t1")))
      const t2 = yield* Effect.fork(run("t2", "t2", gated("t2")))
      yield* holding(2)
      // Both workers are busy with other instances' scripts: t3 has none running, so it starts a third thread.
      const started = Date.now()
      expect(yield* run("t3", "t3", quick).pipe(Effect.timeout("5 seconds"))).toMatchObject({ _tag: "Completed", value: "quick" })
      expect(Date.now() - started).toBeLessThan(3_000)

      // A second script of an instance that has one running (another environment of t1's) waits for the pool's size.
      const t1Again = yield* Effect.fork(run("t1-other", "t1", quick))
      expect(yield* stillWaiting(t1Again)).toBe(true)
      // And no instance goes past maxWorkers: with three held, t4 waits too.
      const t3 = yield* Effect.fork(run("t3", "t3", gated("t3")))
      yield* holding(3)
      const t4 = yield* Effect.fork(run("t4", "t4", quick))
      expect(yield* stillWaiting(t4)).toBe(true)
      expect(yield* workers).toBe(3)

      // Freed threads go to those waiting, each as its rule lets it: t4 first (no script of its own), then t1's.
      yield* open("t3")
      expect(yield* Fiber.join(t4)).toMatchObject({ _tag: "Completed", value: "quick" })
      expect(yield* stillWaiting(t1Again)).toBe(true)
      yield* open("t2")
      expect(yield* Fiber.join(t1Again)).toMatchObject({ _tag: "Completed", value: "quick" })
      yield* open("t1")
      expect((yield* Effect.all([Fiber.join(t1), Fiber.join(t2), Fiber.join(t3)])).map((result) => result._tag)).toEqual(["Completed", "Completed", "Completed"])
      // Threads past the pool's size end once idle a second; the pool's own wait for idleMs.
      yield* Effect.repeat(workers, { until: (n) => n <= 2, schedule: Schedule.spaced("20 millis") }).pipe(Effect.timeout("5 seconds"))
      expect(yield* workers).toBe(2)
    }).pipe(Effect.provide(ScriptRunnerLive({ workers: 2, maxWorkers: 3 }))), 30_000)

  it.live("by default, four instances' scripts that hold their threads leave a fifth instance's script waiting for none", () =>
    Effect.gen(function*() {
      const gates: Array<() => void> = []
      const gate: ScriptModule = { name: "gate", exports: ["wait"], kind: "host" }
      const host: ScriptHost = { call: () => new Promise((resolve) => gates.push(() => resolve(null))) }
      const gated = scriptRun("/scripts/gated.js", `import { wait } from "env:gate"\nexport default async () => { await wait(); return "held" }`, { modules: [gate] })
      const held = yield* Effect.forEach(["t1", "t2", "t3", "t4"], (instance) => Effect.fork(runIn(instance, gated, host)))
      yield* Effect.repeat(Effect.sync(() => gates.length), { until: (n) => n >= 4, schedule: Schedule.spaced("20 millis") })
      const quick = yield* runIn("t5", scriptRun("/scripts/quick.js", `export default () => "quick"`)).pipe(Effect.timeout("5 seconds"))
      expect(quick).toMatchObject({ _tag: "Completed", value: "quick" })
      for (const open of gates) open()
      for (const fiber of held) expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Completed", value: "held" })
    }).pipe(Effect.provide(ScriptRunnerLive())), 30_000)

  it.live("holds each script to its own memory: neighbours holding most of the limit at once both complete, one over it fails as out of memory", () =>
    Effect.gen(function*() {
      const holds = (mb: number) =>
        scriptRun("/scripts/holds.js", `export default async () => {
  const data = new Uint8Array(${mb} * 1024 * 1024).fill(1)
  await new Promise((resolve) => setTimeout(resolve, 800))
  return data.length / 1024 / 1024
}`, { timeoutMs: 10_000 })
      const [a, b, over] = yield* Effect.all([runIn("a", holds(40)), runIn("b", holds(40)), runIn("c", holds(80))], { concurrency: "unbounded" })
      expect(a).toMatchObject({ _tag: "Completed", value: 40 })
      expect(b).toMatchObject({ _tag: "Completed", value: 40 })
      expect(over).toMatchObject({ _tag: "OutOfMemory", limitMb: 64 })
      // What a run left for the garbage collector is not charged to the next run on its thread.
      for (let i = 0; i < 3; i++) expect(yield* runIn("a", holds(40))).toMatchObject({ _tag: "Completed", value: 40 })
    }).pipe(Effect.provide(ScriptRunnerLive({ maxMemoryMb: 64 }))), 30_000)

  it.live("refuses env: calls past 64 waiting for answers with a readable error, and takes more once they are answered", () =>
    Effect.gen(function*() {
      const { host: files } = fakeHost(new Map([["/inbox/a.txt", "a"]]))
      const slow: ScriptHost = { call: (module, fn, args) => new Promise((resolve) => setTimeout(resolve, 50)).then(() => files.call(module, fn, args)) }
      const result = yield* runIn("p", scriptRun("/scripts/flood.js", `import { readText } from "env:fs"
export default async () => {
  const settled = await Promise.allSettled(Array.from({ length: 100 }, () => readText("/inbox/a.txt")))
  const refused = settled.filter((s) => s.status === "rejected").map((s) => s.reason.message)
  return { answered: settled.filter((s) => s.status === "fulfilled").length, refused: refused.length, reason: refused[0], after: await readText("/inbox/a.txt") }
}`), slow)
      expect(result).toMatchObject({
        _tag: "Completed",
        value: { answered: 64, refused: 36, reason: expect.stringContaining("the script has 64 env: calls waiting for answers, the most it may: await some"), after: "a" }
      })
    }).pipe(Effect.provide(ScriptRunnerLive())))

  it.live("gives the next run a thread when one it terminates is held in a blocking call, and counts that one until it ends", () =>
    Effect.gen(function*() {
      const directory = yield* Effect.acquireRelease(
        Effect.sync(() => mkdtempSync(join(tmpdir(), "foundry-blocked-"))),
        (path) => Effect.sync(() => rmSync(path, { recursive: true, force: true }))
      )
      const fifo = join(directory, "held")
      execFileSync("mkfifo", [fifo])
      const pool = yield* makeWorkerPool({
        file: fileURLToPath(new URL("./fixtures/blockingWorker.mjs", import.meta.url)),
        workers: 1,
        maxWorkers: 1,
        idleMs: 60_000,
        maxMemoryMb: 64,
        settle: "100 millis",
        stopWithin: "300 millis"
      })
      const { host } = fakeHost()
      const held = yield* pool.run("p", scriptRun("/scripts/held.js", `export default () => 1`, { args: { fifo } }), host)
      expect(held).toMatchObject({ _tag: "Completed", value: { fifo } })
      // The thread never settles and cannot be terminated while it reads: the pool's only thread.
      const next = yield* pool.run("p", scriptRun("/scripts/next.js", `export default () => 2`, { args: { next: true } }), host).pipe(
        Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("the next run waited for a thread that cannot stop") })
      )
      expect(next).toMatchObject({ _tag: "Completed", value: { next: true } })
      expect(pool.live()).toBe(2)
      // Once its call returns, the held thread ends and is no longer counted.
      writeFileSync(fifo, "x")
      yield* Effect.sync(pool.live).pipe(Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (live) => live === 1 }), Effect.timeout("10 seconds"))
    }).pipe(Effect.scoped), 30_000)
})
