/**
 * A cluster runner follows the store's current release, which a deploy to another runner changes.
 * One it cannot load is tried again less and less often (each try of a release not loaded yet
 * reads the store's copy), and a release made current after it is served at the next look.
 * Driven through the `Deployments` layer on a real store and the releases the deploy tests build.
 */
import { cpSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Scope } from "effect"
import * as BuildStatus from "../../src/compiler/BuildStatus.js"
import * as CurrentApp from "../../src/compiler/CurrentApp.js"
import { loadProject } from "../../src/compiler/loadProject.js"
import { RunJournal } from "../../src/journal/RunJournal.js"
import * as Deployments from "../../src/release/Deployments.js"
import * as Releases from "../../src/release/Releases.js"
import * as ReleaseStorage from "../../src/release/ReleaseStorage.js"
import { Schedules } from "../../src/triggers/Schedules.js"
import { sqlite, storageLayer } from "../journal/backends.js"
import { activateIn, contentOf, deskReleases } from "./deploySupport.js"

const notInThisTest = Effect.dieMessage("not used by the follower")

describe("a cluster runner following the store's current release", () => {
  it.scopedLive("tries a release it cannot load less and less often, and serves the next one made current at once", () =>
    Effect.gen(function*() {
      const { v1, v2 } = yield* deskReleases
      const root = join(mkdtempSync(join(tmpdir(), "foundry-release-follower-")), v1.id)
      cpSync(v1.folder, root, { recursive: true })
      const stores = yield* Layer.build(ReleaseStorage.layer.pipe(Layer.provideMerge(storageLayer(yield* sqlite.fresh))))
      const storage = Context.get(stores, ReleaseStorage.ReleaseStorage)
      const activate = (id: string, content: ReturnType<typeof contentOf>) => activateIn(storage, id, content)
      const broken = "rel_0123456789ab"
      const v2Content = contentOf(v2.folder)
      let tries = 0
      const counting = ReleaseStorage.ReleaseStorage.of({
        ...storage,
        content: (id) => Effect.zipRight(Effect.sync(() => id === broken && tries++), storage.content(id))
      })
      const synced: Array<string> = []
      const schedules = Schedules.of({
        sync: (app) => Effect.sync(() => synced.push(app.release)),
        list: notInThisTest,
        pause: () => notInThisTest,
        resume: () => notInThisTest,
        trigger: () => notInThisTest
      })
      const first = yield* loadProject(root, 1)
      const context = yield* Layer.build(
        Deployments.layer({ startedFrom: first, followEvery: "20 millis" }).pipe(
          Layer.provideMerge(Releases.layer({ serving: { scope: yield* Scope.make(), given: true } })),
          Layer.provideMerge(Layer.mergeAll(
            CurrentApp.layer(first),
            BuildStatus.layer,
            Layer.succeed(Schedules, schedules),
            Layer.succeed(ReleaseStorage.ReleaseStorage, counting),
            Layer.succeed(RunJournal, Context.get(stores, RunJournal))
          ))
        )
      )
      const current = Context.get(context, CurrentApp.CurrentApp)
      expect((yield* current.get).release).toBe(v1.id)
      // Another runner was deployed a release whose copy in the store this runner cannot use.
      expect(yield* activate(broken, { ...v2Content, files: Object.fromEntries(Object.keys(v2Content.files).map((file) => [file, "%%%"])) })).toBe(true)
      // Looked at every 20 ms for 1.5 s: 75 tries at that pace; 20, 40, 80, ... ms apart, 6.
      yield* Effect.sleep("1500 millis")
      expect(tries).toBeGreaterThanOrEqual(3)
      expect(tries).toBeLessThanOrEqual(10)
      expect((yield* current.get).release).toBe(v1.id)

      // A deploy of v2 elsewhere: this runner serves it at its next look, not after the broken one's wait.
      expect(yield* activate(v2.id, v2Content)).toBe(true)
      for (let look = 0; look < 100 && (yield* current.get).release !== v2.id; look++) yield* Effect.sleep("20 millis")
      expect((yield* current.get).release).toBe(v2.id)
      expect(synced).toEqual([v2.id])
    }).pipe(Effect.provide(NodeContext.layer)))
})
