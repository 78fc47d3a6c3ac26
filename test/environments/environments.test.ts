/**
 * The environments service over a real SQLite store: replayed calls answer what they answered
 * (undo, redo, present), undo/redo follow the log through mixed sequences, and a session sees what
 * another process wrote before its next verb.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import { defineEnvironment, type EnvironmentDefinition } from "../../src/definitions/defineEnvironment.js"
import { definePureModule } from "../../src/definitions/environmentModules.js"
import { EnvironmentStorage, SqlEnvironmentStorage } from "../../src/durable/EnvironmentStorage.js"
import * as SqliteDatabase from "../../src/durable/SqliteDatabase.js"
import { Environments, layer as environmentsLayer, type VerbScope } from "../../src/environments/Environments.js"
import { ScriptRunnerLive } from "../../src/environments/script/ScriptRunner.js"
import * as McpClients from "../../src/mcp/McpClients.js"
import type { VerbInput, VerbName } from "../../src/environments/verbInputs.js"
import { verbScope } from "./support/verbScope.js"

const environment = defineEnvironment({ files: { "/inbox/a.txt": "hello" } })

const scopeFor = (runId: string, toolCallId: string, of: EnvironmentDefinition = environment): VerbScope =>
  verbScope(of, { runId, toolCallId })

/** A store file for one test, removed afterwards. */
const storeFile = Effect.acquireRelease(
  Effect.sync(() => join(mkdtempSync(join(tmpdir(), "foundry-env-")), "foundry.db")),
  (file) => Effect.sync(() => rmSync(join(file, ".."), { recursive: true, force: true }))
)

/** The service as a process would have it, over the store file. */
const processOn = (file: string) =>
  Layer.build(
    environmentsLayer().pipe(
      Layer.provideMerge(SqlEnvironmentStorage),
      Layer.provide(ScriptRunnerLive()),
      Layer.provide(McpClients.layer()),
      Layer.provide(SqliteDatabase.layer(file)),
      Layer.provide(NodeContext.layer)
    )
  )

/** A verb's answer, or its failure's message. */
const verb = <K extends VerbName>(runId: string, toolCallId: string, name: K, input: VerbInput<K>, of?: EnvironmentDefinition) =>
  Effect.flatMap(Environments, (environments) => environments.verb(scopeFor(runId, toolCallId, of), name, input)).pipe(
    Effect.either,
    Effect.map((result) => Either.isLeft(result) ? `ERR ${result.left.message}` : result.right)
  )

describe("environments", () => {
  it.scopedLive("a script's long output is cut for the model, and what was captured is in a file of the run's and call's, saying where it ends", () =>
    Effect.gen(function*() {
      const small = defineEnvironment({ limits: { maxOutputBytes: 100, maxFileBytes: 2000 } })
      const process = yield* processOn(yield* storeFile)
      const script = `export default () => { for (let i = 0; i < 500; i++) console.log("line " + i); return "done" }\n`
      yield* Effect.provide(verb("r1", "c1", "write_file", { path: "/scripts/loud.js", content: script }, small), process)
      const ran = yield* Effect.provide(verb("r1", "c2", "run_script", { path: "/scripts/loud.js" }, small), process)
      const kept = /its first (\d+) bytes are in (\/tmp\/output-r1-c2\.txt)/.exec(ran)
      expect(kept, ran).not.toBeNull()
      const file = yield* Effect.provide(verb("r1", "c3", "read_file", { path: kept![2]! }, small), process)
      expect(file).toContain("line 0")
      const end = yield* Effect.provide(verb("r1", "c4", "grep", { pattern: "output was cut here", path: "/tmp" }, small), process)
      const printed = Array.from({ length: 500 }, (_, i) => `line ${i}\n`).join("").length
      expect(end).toContain(`[the output was cut here: ${kept![1]} of its ${printed} bytes were captured]`)
    }))

  it.scopedLive("a script's error and a test file's results are cut as its output is, saying what was left out", () =>
    Effect.gen(function*() {
      const process = yield* processOn(yield* storeFile)
      const run = <K extends VerbName>(id: string, name: K, input: VerbInput<K>) => Effect.provide(verb("r1", id, name, input), process)
      const thrower = `export default () => { throw new Error("bad row: " + "x".repeat(5_000_000) + " (the end)") }\n`
      yield* run("c1", "write_file", { path: "/scripts/throws.js", content: thrower })
      const failed = yield* run("c2", "run_script", { path: "/scripts/throws.js" })
      expect(failed).toMatch(/^ERR \/scripts\/throws\.js failed: Error: bad row: x+\n\[\d+ bytes of the error not shown\]\n/)
      expect(failed).toContain("/scripts/throws.js:1")
      expect(failed.length).toBeLessThan(16_000)

      const many = `import { test, assert } from "env:test"\n` +
        `for (let i = 0; i < 100_000; i++) test("case " + i, () => {})\n` +
        `test("the odd one", () => assert.equal(1, 2))\n`
      yield* run("c3", "write_file", { path: "/scripts/many.test.js", content: many })
      const results = yield* run("c4", "run_tests", { path: "/scripts/many.test.js" })
      expect(results).toMatch(/^\/scripts\/many\.test\.js: 100000 passed, 1 failed\nFAILED the odd one: AssertionError: expected 1 to equal 2\n +at \/scripts\/many\.test\.js:3:\d+\nok case 0\nok case 1\n/)
      expect(results).toMatch(/\n\[\d+ more results not shown \(0 of them failed\), past \d+ bytes \([^)]*\): run one test file at a time, or split a large one\]$/)
      expect(results.length).toBeLessThan(16_000)
    }), { timeout: 60_000 })

  it.scopedLive("a script nested too deeply to parse, or with a problem in every statement, is refused in a few lines", () =>
    Effect.gen(function*() {
      const process = yield* processOn(yield* storeFile)
      const run = <K extends VerbName>(id: string, name: K, input: VerbInput<K>) => Effect.provide(verb("r1", id, name, input), process)
      // TypeScript parses recursively: this overflowed its stack, and the verb died instead of refusing.
      const deep = `export default () => ${"[".repeat(10_000)}${"]".repeat(10_000)}\n`
      expect(yield* run("c1", "write_file", { path: "/scripts/deep.js", content: deep })).toBe(
        "ERR /scripts/deep.js was not saved: /scripts/deep.js is too deeply nested to check (brackets, blocks or operators nested very deeply): write it flatter; build deep data in a loop, or read it from a JSON file"
      )
      // esbuild quotes the whole line with each of its 1,000 problems (4 MB); the answer lists ten, each around its column.
      const broken = `export default () => { ${"1=1;".repeat(1000)} }\n`
      const refused = yield* run("c2", "write_file", { path: "/scripts/broken.js", content: broken })
      expect(refused).toMatch(/^ERR \/scripts\/broken\.js was not saved: line 1:24: Invalid assignment target\n  export default \(\) => \{ 1=1;1=1;.*…\n {25}\^\n/)
      expect(refused).toContain("\n… and 990 more problems")
      expect(refused.length).toBeLessThan(3000)
      expect(yield* run("c3", "ls", { path: "/scripts" })).toBe("/scripts is empty")
    }))

  it.scopedLive("a pure module that cannot be made fails the scripts that import it, not the environment's other verbs", () =>
    Effect.gen(function*() {
      const broken = defineEnvironment({
        files: { "/inbox/a.txt": "hello" },
        modules: [definePureModule({ name: "xlsx", from: "@e965/xlsx", pick: ["read", "wirte"] })]
      })
      const process = yield* processOn(yield* storeFile)
      expect(yield* Effect.provide(verb("r1", "c1", "read_file", { path: "/inbox/a.txt" }, broken), process)).toContain("hello")
      yield* Effect.provide(verb("r1", "c2", "write_file", { path: "/scripts/x.js", content: `import { read } from "env:xlsx"\nexport default () => typeof read\n` }, broken), process)
      const ran = yield* Effect.provide(verb("r1", "c3", "run_script", { path: "/scripts/x.js" }, broken), process)
      expect(ran).toContain(`@e965/xlsx has no export "wirte"`)
    }))

  it.scopedLive("edit_file keeps a file's UTF-8 BOM, and refuses a file that is not UTF-8 as read_file does, leaving it as it was", () =>
    Effect.gen(function*() {
      const process = yield* processOn(yield* storeFile)
      const run = <K extends VerbName>(id: string, name: K, input: VerbInput<K>) => Effect.provide(verb("r1", id, name, input), process)
      // Excel's "CSV UTF-8" starts with a BOM; a Windows-1252 CSV holds "é" as the one byte 0xE9.
      yield* run("c1", "write_file", { path: "/inbox/people.csv", content: "\uFEFFname,city\nJosé,Paris\n" })
      const hexOf = `import { readFile } from "env:fs"\nexport default async ({ path }) => Array.from(await readFile(path), (byte) => byte.toString(16).padStart(2, "0")).join("")\n`
      const writeLatin = `import { writeFile } from "env:fs"\nexport default async () => writeFile("/inbox/latin.csv", new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x2c, 0x6f, 0x6b, 0x0a]))\n`
      yield* run("c2", "write_file", { path: "/scripts/hex.js", content: hexOf })
      yield* run("c3", "write_file", { path: "/scripts/latin.js", content: writeLatin })
      yield* run("c4", "run_script", { path: "/scripts/latin.js" })

      expect(yield* run("c5", "edit_file", { path: "/inbox/people.csv", old: "name", new: "person" })).toBe("edited /inbox/people.csv (1 replacement)")
      const edited = yield* run("c6", "run_script", { path: "/scripts/hex.js", args: { path: "/inbox/people.csv" } })
      expect(edited).toContain(`"efbbbf${Buffer.from("person,city\nJosé,Paris\n").toString("hex")}"`)

      const refused = yield* run("c7", "edit_file", { path: "/inbox/latin.csv", old: "ok", new: "fine" })
      expect(refused).toBe(yield* run("c8", "read_file", { path: "/inbox/latin.csv" }))
      expect(refused).toBe("ERR /inbox/latin.csv is binary (8 bytes): use describe to see what it holds, or process it in a script")
      const kept = yield* run("c9", "run_script", { path: "/scripts/hex.js", args: { path: "/inbox/latin.csv" } })
      expect(kept).toContain(`"636166e92c6f6b0a"`)
    }))

  it.scopedLive("a replayed undo or redo answers what it answered, and changes nothing again", () =>
    Effect.gen(function*() {
      const file = yield* storeFile
      const first = yield* processOn(file)
      yield* Effect.provide(verb("r1", "c1", "write_file", { path: "/out/x.txt", content: "one" }), first)
      yield* Effect.provide(verb("r1", "c2", "write_file", { path: "/out/x.txt", content: "two" }), first)
      const undone = yield* Effect.provide(verb("r1", "c3", "undo", {}), first)
      const redone = yield* Effect.provide(verb("r1", "c4", "redo", {}), first)
      // A restart: a new session, the same calls again (their answers were not journaled).
      const second = yield* processOn(file)
      expect(yield* Effect.provide(verb("r1", "c3", "undo", {}), second)).toBe(undone)
      expect(yield* Effect.provide(verb("r1", "c4", "redo", {}), second)).toBe(redone)
      expect(yield* Effect.provide(verb("r1", "c5", "read_file", { path: "/out/x.txt" }), second)).toContain("two")
      const history = yield* Effect.provide(verb("r1", "c6", "history", {}), second)
      expect(history.split("\n")).toHaveLength(4)
    }))

  it.scopedLive("undo and redo follow the log through mixed sequences", () =>
    Effect.gen(function*() {
      const layer = yield* processOn(yield* storeFile)
      const read = (id: string) => Effect.provide(verb("r", id, "read_file", { path: "/out/x.txt" }), layer)
      const run = <K extends VerbName>(id: string, name: K, input: VerbInput<K>) => Effect.provide(verb("r", id, name, input), layer)
      yield* run("1", "write_file", { path: "/out/x.txt", content: "a" })
      yield* run("2", "write_file", { path: "/out/x.txt", content: "b" })
      yield* run("3", "write_file", { path: "/out/x.txt", content: "c" })
      yield* run("4", "undo", {})
      yield* run("5", "undo", {})
      expect(yield* read("r5")).toContain("a")
      yield* run("6", "redo", {})
      expect(yield* read("r6")).toContain("b")
      yield* run("7", "checkpoint", { label: "at b" })
      yield* run("8", "write_file", { path: "/out/x.txt", content: "d" })
      expect(yield* run("9", "redo", {})).toContain("nothing to redo")
      yield* run("10", "undo", {})
      expect(yield* read("r10")).toContain("b")
      yield* run("11", "undo", {})
      expect(yield* read("r11")).toContain("a")
      yield* run("12", "undo", { version: 3 })
      expect(yield* read("r12")).toContain("c")
      yield* run("13", "undo", {})
      expect(yield* read("r13")).toContain("a")
    }))

  it.scopedLive("a replayed present returns its own artifact; presenting a changed file again makes a new one", () =>
    Effect.gen(function*() {
      const layer = yield* processOn(yield* storeFile)
      const run = <K extends VerbName>(id: string, name: K, input: VerbInput<K>) => Effect.provide(verb("r", id, name, input), layer)
      yield* run("1", "write_file", { path: "/out/report.md", content: "first draft" })
      const presented = yield* run("2", "present", { path: "/out/report.md", caption: "The report" })
      expect(yield* run("2", "present", { path: "/out/report.md", caption: "The report" })).toBe(presented)
      yield* run("3", "write_file", { path: "/out/report.md", content: "the second, longer draft" })
      const again = yield* run("4", "present", { path: "/out/report.md", caption: "The report" })
      expect(again).not.toBe(presented)
      const artifacts = yield* Effect.provide(Effect.flatMap(EnvironmentStorage, (storage) => storage.artifacts("r")), layer)
      expect(artifacts.map((artifact) => artifact.size)).toEqual([11, 24])
      expect(yield* run("5", "present", { path: "/out/report.md", caption: "  " })).toContain("caption is required")
      expect(yield* run("6", "present", { path: "/inbox/a.txt", caption: "x" })).toContain("from /out only")
    }))

  it.scopedLive("a session reads what another process wrote since, before its next verb", () =>
    Effect.gen(function*() {
      const file = yield* storeFile
      const a = yield* processOn(file)
      const b = yield* processOn(file)
      yield* Effect.provide(verb("ra", "1", "write_file", { path: "/n.txt", content: "from A" }), a)
      expect(yield* Effect.provide(verb("rb", "1", "read_file", { path: "/n.txt" }), b)).toContain("from A")
      yield* Effect.provide(verb("rb", "2", "write_file", { path: "/n.txt", content: "from B" }), b)
      expect(yield* Effect.provide(verb("ra", "2", "read_file", { path: "/n.txt" }), a)).toContain("from B")
      yield* Effect.provide(verb("ra", "3", "write_file", { path: "/m.txt", content: "A again" }), a)
      expect(yield* Effect.provide(verb("rb", "3", "read_file", { path: "/n.txt" }), b)).toContain("from B")
      expect(yield* Effect.provide(verb("rb", "4", "read_file", { path: "/m.txt" }), b)).toContain("A again")
    }))
})
