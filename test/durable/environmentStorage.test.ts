/**
 * Working environments as stored, once per backend (SQLite and PostgreSQL): versions appended
 * behind a fence on the scope's head and read back byte for byte, blobs kept once per content,
 * replay lookups by tool call, history pages, and artifacts with their bytes.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Either, Layer, Option, TestClock } from "effect"
import { Database } from "../../src/durable/Database.js"
import { StoreError } from "../../src/durable/StoreError.js"
import {
  EnvironmentStorage,
  type EnvironmentScope,
  hashOf,
  type NewVersion,
  SqlEnvironmentStorage
} from "../../src/durable/EnvironmentStorage.js"
import type { Tree } from "../../src/environments/vfs/Tree.js"
import { backends, type DatabaseLayer } from "../journal/backends.js"

const text = (value: string) => new TextEncoder().encode(value)
const tree = (files: Record<string, Uint8Array | string>): Tree =>
  new Map(Object.entries(files).map(([path, content]) => [path, typeof content === "string" ? text(content) : content]))

const scope: EnvironmentScope = { environment: "workspace", key: "instance:shop/acme" }

const change = (expectedHead: number, files: Tree, more: Partial<NewVersion> = {}): NewVersion => ({
  scope,
  kind: "change",
  label: `change on ${expectedHead}`,
  tree: files,
  runId: "run_1",
  toolCallId: null,
  outcome: null,
  expectedHead,
  ...more
})

/** The storage and its database on `place`, open for the test. */
const open = (place: DatabaseLayer) =>
  Effect.map(Layer.build(SqlEnvironmentStorage.pipe(Layer.provideMerge(place))), (context) => ({
    storage: Context.get(context, EnvironmentStorage),
    database: Context.get(context, Database)
  }))

const blobCount = (database: Context.Tag.Service<Database>) =>
  Effect.map(database.read({ sql: "SELECT COUNT(*) AS n FROM foundry_environment_blobs", params: [] }), (rows) => Number(rows[0]?.["n"]))

/** A tree's files as plain arrays, comparable whatever the byte arrays' class. */
const plain = (files: Tree) => Object.fromEntries([...files].map(([path, bytes]) => [path, [...bytes]]))

const allBytes = Uint8Array.from({ length: 256 }, (_, i) => i)

for (const backend of backends) {
  describe.skipIf(backend.skip)(`environment storage on ${backend.name}`, () => {
    const fresh = Effect.flatMap(backend.fresh, open)

    it.scoped("appends a tree and reads it back byte for byte, binary and empty files included", () =>
      Effect.gen(function*() {
        const { storage } = yield* fresh
        expect(Option.isNone(yield* storage.head(scope))).toBe(true)
        yield* TestClock.setTime(1_000)
        const files = tree({ "/inbox/a.csv": "x,y\n1,2\n", "/tmp/blob.bin": allBytes, "/tmp/empty": new Uint8Array(0) })
        const appended = yield* storage.append(change(0, files, { kind: "seed", label: "seed", toolCallId: "call_1" }))
        expect(appended).toEqual({
          version: 1, kind: "seed", label: "seed", runId: "run_1", toolCallId: "call_1", createdAt: 1_000, files: 3, bytes: 8 + 256
        })
        const head = Option.getOrThrow(yield* storage.head(scope))
        expect(head.version).toEqual(appended)
        expect(plain(head.tree)).toEqual(plain(files))
        expect(head.tree.get("/tmp/empty")?.byteLength).toBe(0)
        expect(head.tree.get("/tmp/blob.bin")).toBeInstanceOf(Uint8Array)
      }))

    it.scoped("numbers versions 1, 2, 3 and reads older trees at their version", () =>
      Effect.gen(function*() {
        const { storage } = yield* fresh
        const trees = [tree({ "/a": "one" }), tree({ "/a": "two", "/b": "b" }), tree({ "/b": "b" })]
        for (const [index, files] of trees.entries()) {
          expect((yield* storage.append(change(index, files))).version).toBe(index + 1)
        }
        for (const [index, files] of trees.entries()) {
          const stored = Option.getOrThrow(yield* storage.at(scope, index + 1))
          expect(stored.version.version).toBe(index + 1)
          expect(plain(stored.tree)).toEqual(plain(files))
        }
        expect(Option.getOrThrow(yield* storage.head(scope)).version.version).toBe(3)
        expect(Option.isNone(yield* storage.at(scope, 4))).toBe(true)
      }))

    it.scoped("refuses a change made on a stale head with VersionConflict, writing nothing", () =>
      Effect.gen(function*() {
        const { database, storage } = yield* fresh
        yield* storage.append(change(0, tree({ "/a": "one" })))
        yield* storage.append(change(1, tree({ "/a": "two" })))
        const blobs = yield* blobCount(database)

        const stale = yield* Effect.either(storage.append(change(1, tree({ "/a": "stale", "/new": "never stored" }), { toolCallId: "call_9" })))
        expect(Either.isLeft(stale) && stale.left).toMatchObject({ _tag: "VersionConflict", expected: 1, actual: 2, scope })
        const ahead = yield* Effect.either(storage.append(change(5, tree({ "/a": "ahead" }))))
        expect(Either.isLeft(ahead) && ahead.left).toMatchObject({ _tag: "VersionConflict", expected: 5, actual: 2 })

        const head = Option.getOrThrow(yield* storage.head(scope))
        expect(head.version.version).toBe(2)
        expect(plain(head.tree)).toEqual(plain(tree({ "/a": "two" })))
        expect(yield* storage.history(scope, { limit: 10 })).toHaveLength(2)
        expect(Option.isNone(yield* storage.recorded(scope, "call_9"))).toBe(true)
        expect(yield* blobCount(database)).toBe(blobs)
      }))

    it.scoped("stores identical content once, across paths and versions", () =>
      Effect.gen(function*() {
        const { database, storage } = yield* fresh
        yield* storage.append(change(0, tree({ "/a": "same", "/b": "same", "/c": "other" })))
        yield* storage.append(change(1, tree({ "/a": "same", "/b": "same", "/c": "other", "/d": "same" })))
        yield* storage.append({ ...change(0, tree({ "/x": "same" })), scope: { environment: "workspace", key: "instance:shop/globex" } })
        expect(yield* blobCount(database)).toBe(2)
        const head = Option.getOrThrow(yield* storage.head(scope))
        expect(plain(head.tree)).toEqual(plain(tree({ "/a": "same", "/b": "same", "/c": "other", "/d": "same" })))
        // Each path gets bytes of its own, not one array shared between paths.
        expect(head.tree.get("/a")).not.toBe(head.tree.get("/b"))
      }))

    it.scoped("finds the version a tool call made, with its recorded outcome", () =>
      Effect.gen(function*() {
        const { storage } = yield* fresh
        yield* storage.append(change(0, tree({ "/a": "1" }), { kind: "seed", label: "seed" }))
        yield* storage.append(change(1, tree({ "/a": "2" }), { toolCallId: "call_write", outcome: JSON.stringify({ ok: true, bytes: 1 }) }))
        yield* storage.append(change(2, tree({ "/a": "3" }), { toolCallId: "call_edit" }))

        const found = Option.getOrThrow(yield* storage.recorded(scope, "call_write"))
        expect(found.version).toMatchObject({ version: 2, toolCallId: "call_write", runId: "run_1" })
        expect(JSON.parse(found.outcome ?? "null")).toEqual({ ok: true, bytes: 1 })
        expect(Option.getOrThrow(yield* storage.recorded(scope, "call_edit")).outcome).toBeNull()
        expect(Option.isNone(yield* storage.recorded(scope, "call_other"))).toBe(true)
        expect(Option.isSome(yield* storage.recorded(scope, "call_write", "run_1"))).toBe(true)
        expect(Option.isNone(yield* storage.recorded(scope, "call_write", "run_2"))).toBe(true)
        expect(Option.isNone(yield* storage.recorded({ ...scope, key: "conversation:c1" }, "call_write"))).toBe(true)
      }))

    it.scoped("pages history newest first, with a limit and a version to go before", () =>
      Effect.gen(function*() {
        const { storage } = yield* fresh
        for (let version = 1; version <= 5; version++) {
          yield* TestClock.setTime(version * 100)
          yield* storage.append(change(version - 1, tree({ "/n": String(version) }), { label: `v${version}` }))
        }
        const first = yield* storage.history(scope, { limit: 2 })
        expect(first.map((v) => [v.version, v.label, v.createdAt])).toEqual([[5, "v5", 500], [4, "v4", 400]])
        expect((yield* storage.history(scope, { limit: 2, before: 4 })).map((v) => v.version)).toEqual([3, 2])
        expect((yield* storage.history(scope, { limit: 10, before: 2 })).map((v) => v.version)).toEqual([1])
        expect(yield* storage.history(scope, { limit: 10, before: 1 })).toEqual([])
      }))

    it.scoped("keeps scopes apart: their own numbering, trees and heads", () =>
      Effect.gen(function*() {
        const { storage } = yield* fresh
        const conversation: EnvironmentScope = { environment: "workspace", key: "conversation:c1" }
        const otherEnvironment: EnvironmentScope = { environment: "analysis", key: scope.key }
        yield* storage.append(change(0, tree({ "/a": "instance 1" })))
        yield* storage.append(change(1, tree({ "/a": "instance 2" })))
        expect((yield* storage.append({ ...change(0, tree({ "/a": "conversation" })), scope: conversation })).version).toBe(1)
        expect((yield* storage.append({ ...change(0, tree({ "/b": "analysis" })), scope: otherEnvironment })).version).toBe(1)

        expect(plain(Option.getOrThrow(yield* storage.head(scope)).tree)).toEqual(plain(tree({ "/a": "instance 2" })))
        expect(plain(Option.getOrThrow(yield* storage.head(conversation)).tree)).toEqual(plain(tree({ "/a": "conversation" })))
        expect(plain(Option.getOrThrow(yield* storage.head(otherEnvironment)).tree)).toEqual(plain(tree({ "/b": "analysis" })))
        expect(Option.isNone(yield* storage.at(conversation, 2))).toBe(true)
        expect((yield* storage.scopes()).map((s) => [s.environment, s.key, s.head])).toEqual([
          ["analysis", scope.key, 1],
          ["workspace", "conversation:c1", 1],
          ["workspace", scope.key, 2]
        ])
        expect((yield* storage.scopes("analysis")).map((s) => s.key)).toEqual([scope.key])
      }))

    it.scoped("stores a tree of many files (more than one statement's worth of blobs)", () =>
      Effect.gen(function*() {
        const { database, storage } = yield* fresh
        const files = tree(Object.fromEntries(Array.from({ length: 700 }, (_, i) => [`/data/${i}.txt`, `file ${i}`])))
        yield* storage.append(change(0, files))
        expect(yield* blobCount(database)).toBe(700)
        const head = Option.getOrThrow(yield* storage.head(scope))
        expect(head.version.files).toBe(700)
        expect(plain(head.tree)).toEqual(plain(files))
      }))

    it.scoped("adds artifacts, lists a run's and gives their bytes back", () =>
      Effect.gen(function*() {
        const { database, storage } = yield* fresh
        const owner = { agent: "shop", instanceId: "acme", conversationId: "c1" }
        yield* TestClock.setTime(2_000)
        const report = yield* storage.addArtifact(
          { ...owner, runId: "run_1", path: "/out/report.csv", caption: "the report", mediaType: "text/csv" },
          text("a,b\n1,2\n")
        )
        expect(report).toMatchObject({ runId: "run_1", path: "/out/report.csv", caption: "the report", size: 8, hash: hashOf(text("a,b\n1,2\n")), createdAt: 2_000 })
        expect(report.id.startsWith("art_")).toBe(true)
        yield* TestClock.setTime(3_000)
        const image = yield* storage.addArtifact({ ...owner, runId: "run_1", path: "/out/chart.png", caption: null, mediaType: "image/png" }, allBytes)
        yield* storage.addArtifact({ ...owner, runId: "run_2", path: "/out/other.txt", caption: null, mediaType: "text/plain" }, text("a,b\n1,2\n"))

        expect(yield* storage.artifacts("run_1")).toEqual([report, image])
        expect((yield* storage.artifacts("run_2")).map((a) => a.path)).toEqual(["/out/other.txt"])
        expect(yield* storage.artifacts("run_3")).toEqual([])
        const got = Option.getOrThrow(yield* storage.artifact(image.id))
        expect(got.artifact).toEqual(image)
        expect([...got.bytes]).toEqual([...allBytes])
        expect(Option.isNone(yield* storage.artifact("art_missing"))).toBe(true)
        // The same bytes presented twice are one blob.
        expect(yield* blobCount(database)).toBe(2)
      }))

    it.scoped("lets exactly one of two concurrent appends on the same head win", () =>
      Effect.gen(function*() {
        const { storage } = yield* fresh
        yield* storage.append(change(0, tree({ "/a": "base" })))
        const results = yield* Effect.all(
          ["left", "right"].map((side) => Effect.either(storage.append(change(1, tree({ "/a": side }), { label: side })))),
          { concurrency: "unbounded" }
        )
        const won = results.filter(Either.isRight)
        expect(won).toHaveLength(1)
        expect(results.filter(Either.isLeft).map((r) => r.left._tag)).toEqual(["VersionConflict"])
        const head = Option.getOrThrow(yield* storage.head(scope))
        expect(head.version.version).toBe(2)
        expect(new TextDecoder().decode(head.tree.get("/a"))).toBe(won[0]?.right.label)
      }))

    it.scoped("takes a version whose write failed as it committed for its own, and a failed write another process beat for a conflict", () =>
      Effect.gen(function*() {
        const place = yield* backend.fresh
        // A database whose next write commits and then fails, as when its connection is lost with
        // the answer to its `COMMIT`.
        const losing = { next: false }
        const answerLost = Layer.effect(Database, Effect.map(Database, (database) =>
          Database.of({
            ...database,
            write: (unit) =>
              Effect.flatMap(database.write(unit), (outcome) => {
                if (!losing.next) return Effect.succeed(outcome)
                losing.next = false
                return Effect.fail(new StoreError({ operation: "write", message: "the connection broke after COMMIT was sent" }))
              })
          }))).pipe(Layer.provideMerge(place))
        const { storage } = yield* open(answerLost)
        const other = yield* open(place)
        yield* storage.append(change(0, tree({ "/a": "base" })))
        losing.next = true
        const appended = yield* storage.append(change(1, tree({ "/a": "mine" })))
        expect(appended.version).toBe(2)
        expect(new TextDecoder().decode(Option.getOrThrow(yield* other.storage.head(scope)).tree.get("/a"))).toBe("mine")
        // Another process's version at that number is not this one's: a conflict, as before.
        yield* other.storage.append(change(2, tree({ "/a": "theirs" })))
        losing.next = true
        const failed = yield* Effect.either(storage.append(change(2, tree({ "/a": "late" }))))
        expect(Either.isLeft(failed) && failed.left._tag).toBe("VersionConflict")
      }))

    it.scoped("lets exactly one of two processes appending on the same head win", () =>
      Effect.gen(function*() {
        const place = yield* backend.fresh
        const first = yield* open(place)
        const second = yield* open(place)
        yield* first.storage.append(change(0, tree({ "/a": "base" })))
        for (let round = 1; round <= 5; round++) {
          const results = yield* Effect.all(
            [first, second].map(({ storage }, i) => Effect.either(storage.append(change(round, tree({ "/a": `${round}-${i}` }))))),
            { concurrency: "unbounded" }
          )
          expect(results.filter(Either.isRight)).toHaveLength(1)
          expect(results.filter(Either.isLeft).map((r) => r.left._tag)).toEqual(["VersionConflict"])
        }
        expect(Option.getOrThrow(yield* second.storage.head(scope)).version.version).toBe(6)
      }))
  })
}
