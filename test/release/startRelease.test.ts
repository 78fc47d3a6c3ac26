/**
 * `foundry start --release` checks its folder against its id (also when the store has that release
 * current already), and makes its release current against the store's current release as it is
 * when the switch commits: a deploy that came between its look at the store and its switch (while
 * it read and hashed the folder) makes it decide again, over that release. Driven through
 * `startRelease` on a real store, the deploy made at the moment the start's switch goes in.
 */
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, DateTime, Effect, Either, Layer, Option, Schema } from "effect"
import type { CompiledApp } from "../../src/compiler/CompiledApp.js"
import { loadProject } from "../../src/compiler/loadProject.js"
import * as SqliteDatabase from "../../src/durable/SqliteDatabase.js"
import { ReleaseManifest, releaseFile } from "../../src/release/ReleaseManifest.js"
import * as ReleaseStorage from "../../src/release/ReleaseStorage.js"
import { summarize } from "../../src/release/releaseSummary.js"
import { startRelease } from "../../src/release/startRelease.js"
import { deskReleases, uploadOf } from "./deploySupport.js"

const loaded = (folder: string) => loadProject(folder, 1).pipe(Effect.provide(NodeContext.layer))

describe("foundry start --release", () => {
  it.scopedLive("a deploy that commits between the start's look and its switch: the start is decided again over it, and its summary is against it", () =>
    Effect.gen(function*() {
      const { v1, v2 } = yield* deskReleases
      const storeFile = join(mkdtempSync(join(tmpdir(), "foundry-start-release-")), "foundry.db")
      const storage = Context.get(
        yield* Layer.build(ReleaseStorage.layer.pipe(Layer.provide(SqliteDatabase.layer(storeFile)), Layer.provide(NodeContext.layer))),
        ReleaseStorage.ReleaseStorage
      )
      const apps = new Map<string, CompiledApp>([[v1.id, yield* loaded(v1.folder)], [v2.id, yield* loaded(v2.folder)]])
      const folders = new Map([[v1.id, v1.folder], [v2.id, v2.folder]])
      const first = apps.get(v2.id)
      if (first === undefined) return yield* Effect.dieMessage("v2 did not load")
      // v1 deployed to another runner at the moment this start's switch goes in (the store had none before).
      const manifestText = readFileSync(join(v1.folder, releaseFile), "utf8")
      const deployV1 = storage.activate({
        id: v1.id,
        deployedAt: 1,
        action: "deploy",
        deployedBy: "tok_other",
        summary: summarize(undefined, new Map()),
        content: {
          createdAt: DateTime.toEpochMillis(Schema.decodeUnknownSync(Schema.parseJson(ReleaseManifest))(manifestText).createdAt),
          manifest: manifestText,
          files: uploadOf(v1.folder).files
        }
      })
      let switches = 0
      const racing = ReleaseStorage.ReleaseStorage.of({
        ...storage,
        activate: (activation) => Effect.zipRight(switches++ === 0 ? deployV1 : Effect.void, storage.activate(activation))
      })
      const served = yield* startRelease({
        storage: racing,
        first,
        given: true,
        folderOf: (id) => Effect.succeed(folders.get(id) ?? ""),
        makeCurrent: (id) => Effect.succeed(apps.get(id) ?? first)
      }).pipe(Effect.provide(NodeContext.layer))
      expect(served.release).toBe(v2.id)
      expect(switches).toBe(2)
      const [started, deployed] = yield* storage.history(10)
      expect(deployed).toMatchObject({ release: v1.id, action: "deploy", previous: null })
      // Against v1, which it replaced: the desk agent was there already (against nothing it would be "added"), its tools changed.
      expect(started).toMatchObject({ release: v2.id, action: "start", previous: v1.id })
      expect(started?.summary.agents).toMatchObject({ added: [], removed: [] })
      expect(started?.summary.tools).toEqual({ added: [], removed: [], changed: ["desk/answer", "desk/confirm"] })
    }))

  it.scopedLive("a folder changed after its build is refused, also when the store has its release current already", () =>
    Effect.gen(function*() {
      const { v1 } = yield* deskReleases
      const folder = join(mkdtempSync(join(tmpdir(), "foundry-start-release-")), v1.id)
      cpSync(v1.folder, folder, { recursive: true })
      const storeFile = join(mkdtempSync(join(tmpdir(), "foundry-start-release-")), "foundry.db")
      const storage = Context.get(
        yield* Layer.build(ReleaseStorage.layer.pipe(Layer.provide(SqliteDatabase.layer(storeFile)), Layer.provide(NodeContext.layer))),
        ReleaseStorage.ReleaseStorage
      )
      const start = Effect.gen(function*() {
        const first = yield* loaded(folder)
        return yield* startRelease({ storage, first, given: true, folderOf: () => Effect.succeed(folder), makeCurrent: () => Effect.succeed(first) })
      }).pipe(Effect.provide(NodeContext.layer))
      expect((yield* start).release).toBe(v1.id)
      const manifest = Schema.decodeUnknownSync(Schema.parseJson(ReleaseManifest))(readFileSync(join(folder, releaseFile), "utf8"))
      const file = manifest.files[0] ?? ""
      writeFileSync(join(folder, file), `${readFileSync(join(folder, file), "utf8")}\n// changed after the build\n`)
      const again = yield* Effect.either(Effect.map(start, (served) => served.release))
      expect(Either.getLeft(again)).toEqual(Option.some(expect.objectContaining({ _tag: "ReleaseInvalid", message: expect.stringContaining("changed after it was built") })))
    }))
})
