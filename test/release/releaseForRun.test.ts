/**
 * A run executes on the release it started on: a load of that release that fails for a moment (here
 * the store's copy, unreadable once) is tried again, and the run is not moved to the current release
 * for good; a release broken for good (the store's copy not its id's) is not waited on. A cached
 * release is checked against its id the first time a process uses it. Driven through `Releases.forRun` on a real store, with the releases the deploy tests build.
 */
import { appendFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Encoding, Layer, Logger, Option, Scope } from "effect"
import * as CurrentApp from "../../src/compiler/CurrentApp.js"
import { loadProject } from "../../src/compiler/loadProject.js"
import { Store } from "../../src/durable/Store.js"
import { StoreError } from "../../src/durable/StoreError.js"
import { RunJournal } from "../../src/journal/RunJournal.js"
import * as Releases from "../../src/release/Releases.js"
import * as ReleaseStorage from "../../src/release/ReleaseStorage.js"
import { sqlite, storageLayer } from "../journal/backends.js"
import { newRun, submit } from "../journal/fixtures.js"
import { activateIn, contentOf, deskReleases } from "./deploySupport.js"

describe("a run's release", () => {
  it.scopedLive("a load of a run's release that fails for a moment is tried again: the run executes on it, not moved to the current one", () =>
    Effect.gen(function*() {
      // The store's copy of v2 cannot be read the first time it is asked for.
      let asked = 0
      const { releases, run, store, v2 } = yield* serverOnV1("foundry-release-for-run-", (storage) => (id) =>
        asked++ === 0 ? Effect.fail(new StoreError({ operation: "releaseContent", message: "the store went away for a moment" })) : storage.content(id))
      expect(yield* releases.forRun(run, (app) => Effect.succeed(app.release))).toBe(v2.id)
      expect(asked).toBe(2)
      expect(Option.map(yield* store.getRun("run_1"), (stored) => stored.release)).toEqual(Option.some(v2.id))
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scopedLive("a release loaded again after it was let go reuses the modules of its first load: only its layers are built anew", () =>
    Effect.gen(function*() {
      const { v1, v2 } = yield* deskReleases
      const root = join(mkdtempSync(join(tmpdir(), "foundry-release-reload-")), v1.id)
      cpSync(v1.folder, root, { recursive: true })
      const stores = yield* Layer.build(ReleaseStorage.layer.pipe(Layer.provideMerge(storageLayer(yield* sqlite.fresh))))
      const storage = Context.get(stores, ReleaseStorage.ReleaseStorage)
      expect(yield* activateIn(storage, v2.id, contentOf(v2.folder))).toBe(true)
      const first = yield* loadProject(root, 1)
      const releases = Context.get(
        yield* Layer.build(Releases.layer({ serving: { scope: yield* Scope.make(), given: true } }).pipe(
          Layer.provide(Layer.mergeAll(CurrentApp.layer(first), Layer.succeed(ReleaseStorage.ReleaseStorage, storage), Layer.succeed(RunJournal, Context.get(stores, RunJournal))))
        )),
        Releases.Releases
      )
      // v2 is not current: each load holds it until its scope closes, and it is let go then.
      const loadOnce = Effect.scoped(Effect.map(releases.load(v2.id), (app) => ({ release: app.release, desk: app.agents.get("desk")?.definition, services: app.services })))
      const before = yield* loadOnce
      const after = yield* loadOnce
      expect([before.release, after.release]).toEqual([v2.id, v2.id])
      expect(before.desk).toBeDefined()
      // The route file's default export, evaluated once: a module imported again would make another.
      expect(after.desk).toBe(before.desk)
      expect(after.services).not.toBe(before.services)
    }).pipe(Effect.provide(NodeContext.layer)))
})

/** The lines logged while `effect` runs. */
const logged = <A, E, R>(effect: (lines: ReadonlyArray<string>) => Effect.Effect<A, E, R>) => {
  const lines: Array<string> = []
  const logger = Logger.make(({ message }) => lines.push((Array.isArray(message) ? message : [message]).map(String).join(" ")))
  return Effect.provide(effect(lines), Logger.replace(Logger.defaultLogger, logger))
}

/**
 * A `foundry start` server's releases over a fresh store: its project a copy of v1's folder, v2 and
 * then v1 deployed (v1 current), run_1 started on v2, and the store's copies as `content` gives them.
 */
const serverOnV1 = (prefix: string, content?: (storage: ReleaseStorage.ReleaseStorage["Type"]) => ReleaseStorage.ReleaseStorage["Type"]["content"]) =>
  Effect.gen(function*() {
    const { v1, v2 } = yield* deskReleases
    const root = join(mkdtempSync(join(tmpdir(), prefix)), v1.id)
    cpSync(v1.folder, root, { recursive: true })
    const stores = yield* Layer.build(ReleaseStorage.layer.pipe(Layer.provideMerge(storageLayer(yield* sqlite.fresh))))
    const storage = Context.get(stores, ReleaseStorage.ReleaseStorage)
    for (const release of [v2, v1]) {
      expect(yield* activateIn(storage, release.id, contentOf(release.folder))).toBe(true)
    }
    const journal = Context.get(stores, RunJournal)
    yield* submit(journal, { ...newRun("run_1"), release: v2.id })
    const run = Option.getOrThrow(yield* Context.get(stores, Store).getRun("run_1"))
    const served = ReleaseStorage.ReleaseStorage.of({ ...storage, content: content === undefined ? storage.content : content(storage) })
    const first = yield* loadProject(root, 1)
    const releases = Context.get(
      yield* Layer.build(Releases.layer({ serving: { scope: yield* Scope.make(), given: false } }).pipe(
        Layer.provide(Layer.mergeAll(CurrentApp.layer(first), Layer.succeed(ReleaseStorage.ReleaseStorage, served), Layer.succeed(RunJournal, journal)))
      )),
      Releases.Releases
    )
    return { v1, v2, root, run, releases, store: Context.get(stores, Store), cache: join(root, ".foundry/release-cache") }
  })

/** The files release.json in `folder` lists. */
const listedIn = (folder: string): ReadonlyArray<string> =>
  (JSON.parse(readFileSync(join(folder, "release.json"), "utf8")) as { readonly files: ReadonlyArray<string> }).files

describe("a cached release", () => {
  it.scopedLive("whose files changed, or that is not whole, is written again from the store's copy the first time it is used, with a warning", () =>
    logged((lines) =>
      Effect.gen(function*() {
        const { cache, releases, run, v2 } = yield* serverOnV1("foundry-release-cache-check-")
        // v2 in the cache already, as an earlier process wrote it; since then one of its files was
        // edited and another lost.
        const folder = join(cache, v2.id)
        cpSync(v2.folder, folder, { recursive: true })
        const files = listedIn(folder)
        expect(files.length).toBeGreaterThan(1)
        const [edited, lost] = [files[0] ?? "", files[files.length - 1] ?? ""]
        appendFileSync(join(folder, edited), "\n// changed after the release was written\n")
        rmSync(join(folder, lost))
        expect(yield* releases.forRun(run, (app) => Effect.succeed(app.release))).toBe(v2.id)
        // Served from the store's copy, written again whole.
        expect(readFileSync(join(folder, edited))).toEqual(readFileSync(join(v2.folder, edited)))
        expect(existsSync(join(folder, lost))).toBe(true)
        expect(lines.some((line) => line.includes(`the release cache's copy of ${v2.id} is not that release`))).toBe(true)
      }))
      .pipe(Effect.provide(NodeContext.layer)))

  it.scopedLive("whose store's copy does not match its id either is broken for good: the run is not kept waiting, and the log names the release and why", () =>
    logged((lines) =>
      Effect.gen(function*() {
        let asked = 0
        const { cache, releases, run, store, v1, v2 } = yield* serverOnV1("foundry-release-broken-", (storage) => (id) =>
          Effect.map(storage.content(id), (content) => {
            if (id !== v2.id) return content
            asked++
            // One of its files is not the file it was deployed with.
            return Option.map(content, (copy) => {
              const [file] = Object.keys(copy.files)
              return file === undefined ? copy : { ...copy, files: { ...copy.files, [file]: Encoding.encodeBase64("export default 1\n") } }
            })
          }))
        const started = Date.now()
        expect(yield* releases.forRun(run, (app) => Effect.succeed(app.release))).toBe(v1.id)
        // Not tried again for seconds: the store gives the same copy every time.
        expect(Date.now() - started).toBeLessThan(1500)
        expect(asked).toBe(1)
        expect(lines.some((line) => line.includes(`release ${v2.id} cannot be served: the store's copy of it does not match its id`))).toBe(true)
        // The copy written from it is not left in the cache to be found again.
        expect(existsSync(join(cache, v2.id))).toBe(false)
        expect(Option.map(yield* store.getRun("run_1"), (stored) => stored.release)).toEqual(Option.some(v1.id))
      }))
      .pipe(Effect.provide(NodeContext.layer)))
})
