/**
 * A run executes on the release it started on: a load of that release that fails for a moment (here
 * the store's copy, unreadable once) is tried again, and the run is not moved to the current release
 * for good. Driven through `Releases.forRun` on a real store, with the releases the deploy tests build.
 */
import { cpSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option, Scope } from "effect"
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
      const { v1, v2 } = yield* deskReleases
      // The server's project: v1's folder, in a place of its own (its release cache is written there).
      const root = join(mkdtempSync(join(tmpdir(), "foundry-release-for-run-")), v1.id)
      cpSync(v1.folder, root, { recursive: true })
      const stores = yield* Layer.build(ReleaseStorage.layer.pipe(Layer.provideMerge(storageLayer(yield* sqlite.fresh))))
      const storage = Context.get(stores, ReleaseStorage.ReleaseStorage)
      // v2 kept in the store (a run started on it), v1 current.
      for (const release of [v2, v1]) {
        expect(yield* activateIn(storage, release.id, contentOf(release.folder))).toBe(true)
      }
      const journal = Context.get(stores, RunJournal)
      yield* submit(journal, { ...newRun("run_1"), release: v2.id })
      const run = Option.getOrThrow(yield* Context.get(stores, Store).getRun("run_1"))
      // The store's copy of v2 cannot be read the first time it is asked for.
      let asked = 0
      const flaky = ReleaseStorage.ReleaseStorage.of({
        ...storage,
        content: (id) => asked++ === 0 ? Effect.fail(new StoreError({ operation: "releaseContent", message: "the store went away for a moment" })) : storage.content(id)
      })
      const first = yield* loadProject(root, 1)
      const releases = Context.get(
        yield* Layer.build(Releases.layer({ serving: { scope: yield* Scope.make(), given: false } }).pipe(
          Layer.provide(Layer.mergeAll(CurrentApp.layer(first), Layer.succeed(ReleaseStorage.ReleaseStorage, flaky), Layer.succeed(RunJournal, journal)))
        )),
        Releases.Releases
      )
      expect(yield* releases.forRun(run, (app) => Effect.succeed(app.release))).toBe(v2.id)
      expect(asked).toBe(2)
      expect(Option.map(yield* Context.get(stores, Store).getRun("run_1"), (stored) => stored.release)).toEqual(Option.some(v2.id))
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
