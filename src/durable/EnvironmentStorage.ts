/**
 * Working environments as stored: each scope's tree as numbered versions (one per change, and
 * version 0 beside the first: the tree it started with), every file's bytes kept once by content hash, and the artifacts runs present. A version is written
 * with the blobs it needs in one unit, fenced on the scope's head, so that two writers starting
 * from the same version cannot both win.
 */
import { createHash } from "node:crypto"
import { Clock, Context, Data, Effect, Equal, Layer, Option, type ParseResult, Schema } from "effect"
import type { Tree } from "../environments/vfs/Tree.js"
import { camelCaseKeys, Database, type Row, type SqlValue, type Statement } from "./Database.js"
import { newId } from "./ids.js"
import { Artifact, EnvironmentVersion, type VersionKind } from "./environmentRecords.js"
import { failAs, StoreError } from "./StoreError.js"

export { Artifact, EnvironmentVersion, VersionKind } from "./environmentRecords.js"

/** Whose tree: an environment of an instance (`instance:<agent>/<id>`) or of a conversation (`conversation:<id>`). */
export interface EnvironmentScope {
  readonly environment: string
  readonly key: string
}

/** A version to append: the whole tree after the change. */
export interface NewVersion {
  readonly scope: EnvironmentScope
  readonly kind: VersionKind
  readonly label: string
  readonly tree: Tree
  readonly runId: string | null
  readonly toolCallId: string | null
  /** The verb's result (JSON), handed back when the same tool call is replayed. */
  readonly outcome: string | null
  /** The scope's latest version this change was made on (0: none); anything else is a `VersionConflict`. */
  readonly expectedHead: number
  /**
   * With a scope's first version (`expectedHead` 0): the tree it started with, kept as version 0 in
   * the same unit, so that a later change of the definition's files does not change where it began.
   */
  readonly start?: Tree | undefined
}

/** A version with its tree. */
export interface StoredTree {
  readonly version: EnvironmentVersion
  readonly tree: Tree
}

/** A scope that has versions: its latest, and when that was made. */
export const StoredScope = Schema.Struct({ environment: Schema.String, key: Schema.String, head: Schema.Number, updatedAt: Schema.Number })
export type StoredScope = typeof StoredScope.Type


/** An artifact to add: the storage names it, hashes it and stamps it. */
export type NewArtifact = Omit<Artifact, "id" | "createdAt" | "hash" | "size" | "toolCallId"> & { readonly toolCallId?: string | null }

/** The scope moved on since the change was made on `expected`: it is at `actual` now. */
export class VersionConflict extends Data.TaggedError("VersionConflict")<{
  readonly scope: EnvironmentScope
  readonly expected: number
  readonly actual: number
  readonly message: string
}> {}

/** Environment storage. */
export class EnvironmentStorage extends Context.Tag("foundry/EnvironmentStorage")<EnvironmentStorage, {
  /** The scope's latest version and its tree. */
  readonly head: (scope: EnvironmentScope) => Effect.Effect<Option.Option<StoredTree>, StoreError>
  /** The latest version's number (0 for none), without its tree: one cheap read. */
  readonly headVersion: (scope: EnvironmentScope) => Effect.Effect<number, StoreError>
  readonly at: (scope: EnvironmentScope, version: number) => Effect.Effect<Option.Option<StoredTree>, StoreError>
  /** Stores the tree as the scope's next version, with the blobs it needs, in one write unit. */
  readonly append: (version: NewVersion) => Effect.Effect<EnvironmentVersion, StoreError | VersionConflict>
  /** The version a tool call made, and its outcome: the call was applied already (replay). `runId` narrows to one run's calls. */
  readonly recorded: (
    scope: EnvironmentScope,
    toolCallId: string,
    runId?: string
  ) => Effect.Effect<Option.Option<{ readonly version: EnvironmentVersion; readonly outcome: string | null }>, StoreError>
  /** Newest first, from version 1 (version 0, the starting tree, is read with `at`); `before` a version number. */
  readonly history: (scope: EnvironmentScope, options: { readonly limit: number; readonly before?: number | undefined }) => Effect.Effect<ReadonlyArray<EnvironmentVersion>, StoreError>
  /** Every scope with versions (of one environment), by environment then key. */
  readonly scopes: (environment?: string) => Effect.Effect<ReadonlyArray<StoredScope>, StoreError>
  readonly addArtifact: (artifact: NewArtifact, bytes: Uint8Array) => Effect.Effect<Artifact, StoreError>
  /** A run's artifacts, in the order they were presented. */
  readonly artifacts: (runId: string) => Effect.Effect<ReadonlyArray<Artifact>, StoreError>
  readonly artifact: (id: string) => Effect.Effect<Option.Option<{ readonly artifact: Artifact; readonly bytes: Uint8Array }>, StoreError>
}>() {}

/** sha256 hex: a blob's key. */
export const hashOf = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex")

const encode = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64")
// A copy: a plain Uint8Array of its own, not a view into Buffer's shared pool.
const decode = (content: string): Uint8Array => Uint8Array.from(Buffer.from(content, "base64"))

/** Under both dialects' limits on bound values in one statement. */
const chunkSize = 300
const chunks = <A>(items: ReadonlyArray<A>): ReadonlyArray<ReadonlyArray<A>> =>
  Array.from({ length: Math.ceil(items.length / chunkSize) }, (_, i) => items.slice(i * chunkSize, (i + 1) * chunkSize))
const marks = (count: number, group = "?") => Array.from({ length: count }, () => group).join(", ")

const versionColumns = "version, kind, label, run_id, tool_call_id, created_at, files, bytes"
const artifactColumns = "id, run_id, agent, instance_id, conversation_id, tool_call_id, path, caption, media_type, size, hash, created_at"
const VersionRow = Schema.Struct({ ...EnvironmentVersion.fields, manifest: Schema.String, outcome: Schema.NullOr(Schema.String) })
const decodeVersions = Schema.decodeUnknown(Schema.Array(VersionRow))
const decodeHistory = Schema.decodeUnknown(Schema.Array(EnvironmentVersion))
const decodeHead = Schema.decodeUnknown(Schema.Array(Schema.Struct({ head: Schema.NullOr(Schema.Number) })))
const decodeManifest = Schema.decodeUnknown(Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.String })))
const decodeArtifacts = Schema.decodeUnknown(Schema.Array(Artifact))
const decodeArtifactsWithContent = Schema.decodeUnknown(Schema.Array(Schema.Struct({ ...Artifact.fields, content: Schema.String })))
const decodeBlobs = Schema.decodeUnknown(Schema.Array(Schema.Struct({ hash: Schema.String, content: Schema.String })))
const decodeBlobHashes = Schema.decodeUnknown(Schema.Array(Schema.Struct({ hash: Schema.String })))
const decodeScopes = Schema.decodeUnknown(Schema.Array(StoredScope))

const insertBlobs = (blobs: ReadonlyArray<readonly [hash: string, bytes: Uint8Array]>): Statement => ({
  sql: `INSERT INTO foundry_environment_blobs (hash, content, size) VALUES ${marks(blobs.length, "(?, ?, ?)")} ON CONFLICT (hash) DO NOTHING`,
  params: blobs.flatMap(([hash, bytes]): Array<SqlValue> => [hash, encode(bytes), bytes.byteLength])
})

/** Admits the unit only while the scope's latest version is `expected` (0: none). */
const headIs = (scope: EnvironmentScope, expected: number): Statement => ({
  sql: `SELECT 1 AS head WHERE COALESCE((SELECT MAX(version) FROM foundry_environment_versions
    WHERE environment = ? AND scope_key = ?), 0) = ?`,
  params: [scope.environment, scope.key, expected]
})

/** Environment storage on the `Database`: reads and group-committed writes. */
export const SqlEnvironmentStorage = Layer.effect(
  EnvironmentStorage,
  Effect.gen(function*() {
    const database = yield* Database
    const rowsOf = <A>(statement: Statement, decodeRows: (rows: ReadonlyArray<Row>) => Effect.Effect<A, ParseResult.ParseError>) =>
      Effect.flatMap(database.read(statement), (rows) => decodeRows(rows.map(camelCaseKeys)))

    /** The latest version number, 0 for none. */
    const headNumber = (scope: EnvironmentScope) =>
      rowsOf({
        sql: "SELECT MAX(version) AS head FROM foundry_environment_versions WHERE environment = ? AND scope_key = ?",
        params: [scope.environment, scope.key]
      }, decodeHead).pipe(
        Effect.map((rows) => rows[0]?.head ?? 0),
        failAs("environmentHead")
      )

    /** The blobs among `hashes` that are stored, with `columns`; chunked under the limits on bound values. */
    const blobsIn = <A>(columns: string, hashes: ReadonlyArray<string>, decodeRows: (rows: ReadonlyArray<Row>) => Effect.Effect<ReadonlyArray<A>, ParseResult.ParseError>) =>
      Effect.map(
        Effect.forEach(chunks(hashes), (chunk) =>
          rowsOf({ sql: `SELECT ${columns} FROM foundry_environment_blobs WHERE hash IN (${marks(chunk.length)})`, params: chunk }, decodeRows)),
        (pages) => pages.flat()
      )

    /** The versions found by `where`, each with its manifest and outcome. */
    const versionRows = (where: string, params: ReadonlyArray<SqlValue>) =>
      rowsOf({ sql: `SELECT ${versionColumns}, manifest, outcome FROM foundry_environment_versions WHERE ${where}`, params }, decodeVersions)

    /** The version found by `where`, with its tree. */
    const load = (where: string, params: ReadonlyArray<SqlValue>) =>
      Effect.gen(function*() {
        const rows = yield* versionRows(where, params)
        const row = rows[0]
        if (row === undefined) return Option.none()
        const { manifest, outcome: _, ...version } = row
        const paths = Object.entries(yield* decodeManifest(manifest))
        const blobs = yield* blobsIn("hash, content", [...new Set(paths.map(([, hash]) => hash))], decodeBlobs)
        const contents = new Map(blobs.map((blob) => [blob.hash, blob.content]))
        const tree = new Map<string, Uint8Array>()
        for (const [path, hash] of paths) {
          const content = contents.get(hash)
          if (content === undefined) return yield* new StoreError({ operation: "loadEnvironment", message: `blob ${hash} of ${path} is missing` })
          tree.set(path, decode(content))
        }
        return Option.some<StoredTree>({ version, tree })
      })

    const conflict = (scope: EnvironmentScope, expected: number) =>
      Effect.flatMap(headNumber(scope), (actual) =>
        Effect.fail(new VersionConflict({ scope, expected, actual, message: `environment ${scope.environment} of ${scope.key} is at version ${actual}, not ${expected}` })))

    /** Whether the scope's version of `version`'s number is the one described, with that tree and outcome. */
    const isStored = (scope: EnvironmentScope, version: EnvironmentVersion, manifest: string, outcome: string | null) =>
      versionRows("environment = ? AND scope_key = ? AND version = ?", [scope.environment, scope.key, version.version]).pipe(
        Effect.map((rows) => rows.some((row) => Equal.equals(Data.struct(row), Data.struct({ ...version, manifest, outcome })))),
        failAs("appendEnvironmentVersion")
      )

    /** A tree's files in path order, each with its hash, and the manifest that names them. */
    const filesOf = (tree: Tree) => {
      const files = [...tree].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([path, bytes]) => ({ path, bytes, hash: hashOf(bytes) }))
      return { files, manifest: JSON.stringify(Object.fromEntries(files.map(({ hash, path }) => [path, hash]))) }
    }

    const insertVersion = (scope: EnvironmentScope, version: EnvironmentVersion, manifest: string, outcome: string | null): Statement => ({
      sql: `INSERT INTO foundry_environment_versions (environment, scope_key, ${versionColumns}, manifest, outcome)
        VALUES (${marks(12)})`,
      params: [scope.environment, scope.key, version.version, version.kind, version.label, version.runId, version.toolCallId, version.createdAt, version.files, version.bytes, manifest, outcome]
    })

    const append = Effect.fn("EnvironmentStorage.append")(function*(next: NewVersion) {
      const { expectedHead, scope, tree } = next
      const { files, manifest } = filesOf(tree)
      const start = next.start === undefined || expectedHead !== 0 ? undefined : filesOf(next.start)
      // Only blobs not stored yet travel in the unit; ON CONFLICT covers a writer storing one meanwhile.
      const byHash = new Map([...files, ...(start?.files ?? [])].map(({ bytes, hash }) => [hash, bytes]))
      const stored = new Set((yield* blobsIn("hash", [...byHash.keys()], decodeBlobHashes).pipe(failAs("appendEnvironmentVersion"))).map((row) => row.hash))
      const missing = [...byHash].filter(([hash]) => !stored.has(hash))
      const createdAt = yield* Clock.currentTimeMillis
      const version: EnvironmentVersion = {
        version: expectedHead + 1,
        kind: next.kind,
        label: next.label,
        runId: next.runId,
        toolCallId: next.toolCallId,
        createdAt,
        files: tree.size,
        bytes: files.reduce((sum, file) => sum + file.bytes.byteLength, 0)
      }
      const seed = start === undefined ? [] : [insertVersion(scope, {
        version: 0,
        kind: "seed",
        label: "the starting files",
        runId: null,
        toolCallId: null,
        createdAt,
        files: start.files.length,
        bytes: start.files.reduce((sum, file) => sum + file.bytes.byteLength, 0)
      }, start.manifest, null)]
      const statements = [...chunks(missing).map(insertBlobs), ...seed, insertVersion(scope, version, manifest, next.outcome)]
      const written = yield* database.write({ guards: [headIs(scope, expectedHead)], statements }).pipe(
        Effect.catchTag("StoreError", (error) =>
          Effect.flatMap(headNumber(scope), (actual) => {
            if (actual === expectedHead) return Effect.fail(error)
            // The write failed as it committed (its connection lost with the answer to `COMMIT`):
            // the version there is this one. Or another process passed the same fence at once
            // (PostgreSQL reads committed rows only): its version took the primary key first, so
            // this one lost the race.
            return Effect.flatMap(
              isStored(scope, version, manifest, next.outcome),
              (stored) => stored ? Effect.succeed({ _tag: "Written" } as const) : conflict(scope, expectedHead)
            )
          }))
      )
      if (written._tag === "Refused") return yield* conflict(scope, expectedHead)
      return version
    })

    return EnvironmentStorage.of({
      headVersion: headNumber,
      head: (scope) =>
        load("environment = ? AND scope_key = ? ORDER BY version DESC LIMIT 1", [scope.environment, scope.key]).pipe(failAs("environmentHead")),
      at: (scope, version) =>
        load("environment = ? AND scope_key = ? AND version = ?", [scope.environment, scope.key, version]).pipe(failAs("environmentVersion")),
      append,
      recorded: (scope, toolCallId, runId) =>
        rowsOf({
          sql: `SELECT ${versionColumns}, manifest, outcome FROM foundry_environment_versions
            WHERE environment = ? AND scope_key = ? AND tool_call_id = ?${runId === undefined ? "" : " AND run_id = ?"} ORDER BY version DESC LIMIT 1`,
          params: [scope.environment, scope.key, toolCallId, ...(runId === undefined ? [] : [runId])]
        }, decodeVersions).pipe(
          Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), ({ manifest: _, outcome, ...version }) => ({ version, outcome }))),
          failAs("recordedEnvironmentChange")
        ),
      history: (scope, { before, limit }) =>
        rowsOf({
          sql: `SELECT ${versionColumns} FROM foundry_environment_versions WHERE environment = ? AND scope_key = ? AND version > 0${
            before === undefined ? "" : " AND version < ?"
          } ORDER BY version DESC LIMIT ?`,
          params: [scope.environment, scope.key, ...(before === undefined ? [] : [before]), limit]
        }, decodeHistory).pipe(failAs("environmentHistory")),
      scopes: (environment) =>
        rowsOf({
          sql: `SELECT environment, scope_key AS key, MAX(version) AS head, MAX(created_at) AS updated_at FROM foundry_environment_versions
            ${environment === undefined ? "" : "WHERE environment = ?"} GROUP BY environment, scope_key ORDER BY environment, scope_key`,
          params: environment === undefined ? [] : [environment]
        }, decodeScopes).pipe(failAs("environmentScopes")),
      addArtifact: (artifact, bytes) =>
        Effect.gen(function*() {
          const stored: Artifact = { ...artifact, toolCallId: artifact.toolCallId ?? null, id: newId("art"), size: bytes.byteLength, hash: hashOf(bytes), createdAt: yield* Clock.currentTimeMillis }
          yield* database.write({
            statements: [insertBlobs([[stored.hash, bytes]]), {
              sql: `INSERT INTO foundry_artifacts (${artifactColumns}) VALUES (${marks(12)})`,
              params: [stored.id, stored.runId, stored.agent, stored.instanceId, stored.conversationId, stored.toolCallId, stored.path, stored.caption, stored.mediaType, stored.size, stored.hash, stored.createdAt]
            }]
          })
          return stored
        }).pipe(failAs("addArtifact")),
      artifacts: (runId) =>
        rowsOf({ sql: `SELECT ${artifactColumns} FROM foundry_artifacts WHERE run_id = ? ORDER BY created_at, id`, params: [runId] }, decodeArtifacts)
          .pipe(failAs("listArtifacts")),
      artifact: (id) =>
        Effect.gen(function*() {
          const rows = yield* rowsOf({
            sql: "SELECT a.*, b.content FROM foundry_artifacts a JOIN foundry_environment_blobs b ON b.hash = a.hash WHERE a.id = ?",
            params: [id]
          }, decodeArtifactsWithContent)
          return Option.map(Option.fromNullable(rows[0]), ({ content, ...artifact }) => ({ artifact, bytes: decode(content) }))
        }).pipe(failAs("getArtifact"))
    })
  })
)
