/**
 * The dev watcher on a real folder: every way a save reaches the disk (plain write, rename over
 * the file as `sed -i` and atomic-saving editors do, delete and re-create, new folders) causes
 * exactly one reload, helpers outside the route folders included, and nothing the project cannot
 * import (the store, generated files, `node_modules`, docs) causes any.
 */
import { describe, expect, it } from "@effect/vitest"
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Cause, Chunk, Effect, Exit, Option, Queue, Stream } from "effect"
import { watchProjectChanges } from "../../src/router/watch.js"
import { agentFile, tempProject, toolFile } from "../support/tempProject.js"

/** Events take tens of milliseconds; this much means none is coming. */
const noEventFor = "3 seconds"
/** Longer than the debounce plus event latency: a second reload for one save would show by now. */
const settle = "400 millis"

const project = {
  "agents/a/agent.ts": agentFile(),
  "lib/helper.ts": "export const greeting = \"hello\"\n",
  ".foundry/foundry.db": "",
  ".foundry/manifest.json": "{}\n",
  ".git/HEAD": "ref: refs/heads/main\n",
  "node_modules/dep/index.js": "export default 1\n",
  "README.md": "# A project\n"
}

/** The bursts of `root`, collected by a fiber that lives as long as the test's scope. */
const collectBursts = (root: string) =>
  Effect.gen(function*() {
    const bursts = yield* Queue.unbounded<ReadonlyArray<string>>()
    yield* watchProjectChanges(root).pipe(Stream.runForEach((burst) => Queue.offer(bursts, burst)), Effect.forkScoped)
    return bursts
  })

/** The next burst after `what`, which must come, and must be the only one for it. */
const oneBurst = (bursts: Queue.Queue<ReadonlyArray<string>>, what: string) =>
  Effect.gen(function*() {
    const burst = yield* Queue.take(bursts).pipe(Effect.timeoutOption(noEventFor))
    if (Option.isNone(burst)) return expect.fail(`no reload after ${what}`)
    yield* Effect.sleep(settle)
    const more = Chunk.toReadonlyArray(yield* Queue.takeAll(bursts))
    expect(more, `more than one reload after ${what}`).toEqual([])
    return burst.value
  })

/** Every burst after `what` until none has come for `noEventFor`; at least one must come. */
const allBursts = (bursts: Queue.Queue<ReadonlyArray<string>>, what: string) =>
  Effect.gen(function*() {
    const all: Array<ReadonlyArray<string>> = []
    for (;;) {
      const burst = yield* Queue.take(bursts).pipe(Effect.timeoutOption(all.length === 0 ? noEventFor : "2 seconds"))
      if (Option.isNone(burst)) break
      all.push(burst.value)
    }
    if (all.length === 0) return expect.fail(`no reload after ${what}`)
    return all
  })

/**
 * Subscribing completes after the stream starts, and nothing says when: write a probe until a
 * reload shows that the watcher sees changes.
 */
const untilWatching = (root: string, bursts: Queue.Queue<ReadonlyArray<string>>) =>
  Effect.gen(function*() {
    for (let attempt = 1; attempt <= 10; attempt++) {
      writeFileSync(join(root, "lib/probe.ts"), `export const attempt = ${attempt}\n`)
      const burst = yield* Queue.take(bursts).pipe(Effect.timeoutOption("500 millis"))
      if (Option.isSome(burst)) {
        yield* Effect.sleep(settle)
        yield* Queue.takeAll(bursts)
        return
      }
    }
    return expect.fail("the watcher never saw a change")
  })

describe("watchProjectChanges", () => {
  it.scopedLive("reloads once for every kind of save, helpers included, and never for what is not source", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const bursts = yield* collectBursts(root)
      yield* untilWatching(root, bursts)
      const agent = join(root, "agents/a/agent.ts")

      writeFileSync(agent, agentFile({ description: "plain write" }))
      expect(yield* oneBurst(bursts, "a plain write")).toEqual(["agents/a/agent.ts"])

      // fs.watch lost the file after one or two of these; every one must reload.
      for (let save = 1; save <= 5; save++) {
        writeFileSync(`${agent}.tmp`, agentFile({ description: `atomic save ${save}` }))
        renameSync(`${agent}.tmp`, agent)
        expect(yield* oneBurst(bursts, `atomic save ${save} of 5`)).toEqual(["agents/a/agent.ts"])
      }

      rmSync(agent)
      expect(yield* oneBurst(bursts, "deleting a route")).toEqual(["agents/a/agent.ts"])
      writeFileSync(agent, agentFile({ description: "re-created" }))
      expect(yield* oneBurst(bursts, "re-creating the route")).toEqual(["agents/a/agent.ts"])

      // None of these is source the project imports; each would show as a path in the next burst.
      writeFileSync(join(root, ".foundry/foundry.db"), "changed")
      writeFileSync(join(root, ".foundry/foundry.db-wal"), "changed")
      writeFileSync(join(root, ".foundry/manifest.json"), "{\"changed\":true}\n")
      writeFileSync(join(root, ".git/HEAD"), "ref: refs/heads/other\n")
      writeFileSync(join(root, "node_modules/dep/index.js"), "export default 2\n")
      mkdirSync(join(root, "node_modules/new-dep"))
      writeFileSync(join(root, "node_modules/new-dep/index.js"), "export default 3\n")
      writeFileSync(join(root, "README.md"), "# Changed\n")
      yield* Effect.sleep("1 second")
      expect(Chunk.toReadonlyArray(yield* Queue.takeAll(bursts)), "a reload for files that are not source").toEqual([])

      // A helper outside the route folders, as a tool would import it.
      writeFileSync(join(root, "lib/helper.ts"), "export const greeting = \"hi\"\n")
      expect(yield* oneBurst(bursts, "editing lib/helper.ts")).toEqual(["lib/helper.ts"])

      // Created at once, the files land before anything watches the new folders; the folder
      // itself reports the change, and its files may follow once the watcher has taken it in (a
      // burst of its own: `foundry dev` reloads for it only if they changed since the reload read
      // them).
      mkdirSync(join(root, "agents/b/tools"), { recursive: true })
      writeFileSync(join(root, "agents/b/agent.ts"), agentFile())
      writeFileSync(join(root, "agents/b/tools/lookup.tool.ts"), toolFile())
      const created = yield* allBursts(bursts, "creating agents/b/ with files")
      expect(created[0]).toContain("agents/b")
      expect(created.flat().filter((file) => !file.startsWith("agents/b")), "paths outside the new folder").toEqual([])

      // The nested folder must be watched from now on (parcel alone watches only agents/b).
      writeFileSync(join(root, "agents/b/tools/lookup.tool.ts"), toolFile("Look it up"))
      expect(yield* oneBurst(bursts, "editing a file in the new nested folder")).toEqual(["agents/b/tools/lookup.tool.ts"])

      // Moved away (as to a trash folder), the folder is the only thing reported.
      renameSync(join(root, "agents/b"), join(root, ".trash"))
      expect(yield* oneBurst(bursts, "moving agents/b/ away")).toEqual(["agents/b"])
    }))
})

describe("watchProjectChanges, bursts and failures", () => {
  it.scopedLive("emits one element per burst", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const reloads = yield* Queue.unbounded<void>()
      yield* watchProjectChanges(root).pipe(Stream.runForEach(() => Queue.offer(reloads, undefined)), Effect.forkScoped)
      // Nothing says when the subscription is live: write until a reload shows it is.
      let seen = false
      for (let attempt = 1; attempt <= 10 && !seen; attempt++) {
        writeFileSync(join(root, "lib/helper.ts"), `export const attempt = ${attempt}\n`)
        seen = Option.isSome(yield* Queue.take(reloads).pipe(Effect.timeoutOption("500 millis")))
      }
      expect(seen, "no reload after editing lib/helper.ts").toBe(true)
      yield* Effect.sleep(settle)
      yield* Queue.takeAll(reloads)
      for (let save = 0; save < 5; save++) writeFileSync(join(root, "lib/helper.ts"), `export const save = ${save}\n`)
      expect(Option.isSome(yield* Queue.take(reloads).pipe(Effect.timeoutOption(noEventFor)))).toBe(true)
      yield* Effect.sleep(settle)
      expect(yield* Queue.size(reloads), "five quick writes made more than one reload").toBe(0)
    }))

  it.scopedLive("a file saved while the watcher takes in a new folder is reported (a checkout that adds a folder and writes on)", () =>
    Effect.gen(function*() {
      // A tree large enough that watching it anew takes a while, as a project with data does.
      const data = Object.fromEntries(Array.from({ length: 4000 }, (_, i) => [`data/d${i % 400}/f${i}.txt`, "row\n"]))
      const root = yield* tempProject({ ...project, ...data })
      const bursts = yield* collectBursts(root)
      yield* untilWatching(root, bursts)
      // A new folder first (the watcher subscribes anew to watch what is in it), then files written
      // one after another, as `git checkout` writes them.
      mkdirSync(join(root, "agents/new"))
      const written: Array<string> = []
      for (let i = 0; i < 150; i++) {
        const file = `lib/written${i}.ts`
        writeFileSync(join(root, file), `export const n = ${i}\n`)
        written.push(file)
        yield* Effect.sleep("2 millis")
      }
      const reported = new Set((yield* allBursts(bursts, "a new folder and writes")).flat())
      expect(reported.has("agents/new")).toBe(true)
      expect(written.filter((file) => !reported.has(file)), "files never reported").toEqual([])
    }), { timeout: 60_000 })

  it.scopedLive("dies with a message naming the folder when it cannot watch it", () =>
    Effect.gen(function*() {
      const missing = join(yield* tempProject({}), "no-such-folder")
      const exit = yield* Stream.runDrain(watchProjectChanges(missing)).pipe(Effect.exit)
      if (Exit.isSuccess(exit)) return expect.fail("watching a missing folder succeeded")
      const defect = Option.getOrUndefined(Cause.dieOption(exit.cause))
      expect(defect).toBeInstanceOf(Error)
      expect(String(defect)).toContain(`cannot watch ${missing} for changes: the folder does not exist`)
    }))
})
