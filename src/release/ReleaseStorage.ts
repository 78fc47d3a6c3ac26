/**
 * Deployed releases in the store: each with its `release.json` and bundled files, so that any
 * process on the store can load it again (a run pinned to it resumed after a restart), the change
 * its last deploy made, which release is current, and the log of every time one was made current.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { failAs, type StoreError } from "../durable/StoreError.js"
import { ReleaseSummary } from "./releaseSummary.js"

/** A release as `GET /api/releases` lists it: no files, and how many runs started on it. */
export class ReleaseEntry extends Schema.Class<ReleaseEntry>("ReleaseEntry")({
  id: Schema.String,
  /** When `foundry build` made it (ms since the epoch). */
  createdAt: Schema.Number,
  /** When it was last made current: deployed, rolled back to, or started with `--release`. */
  deployedAt: Schema.Number,
  /** The token that did it, `start` for `foundry start --release`, `null` on a server open without tokens. */
  deployedBy: Schema.NullOr(Schema.String),
  /** What changed against the release that was current then. */
  summary: Schema.parseJson(ReleaseSummary),
  runs: Schema.Number
}) {}

/** How a release was made current: uploaded, gone back to, or started with `foundry start --release`. */
export const DeploymentAction = Schema.Literal("deploy", "rollback", "start")
export type DeploymentAction = typeof DeploymentAction.Type

/** One entry of the deployment log, a release made current, as `GET /api/deployments` lists it. */
export const DeploymentView = Schema.Struct({
  seq: Schema.Number,
  release: Schema.String,
  action: DeploymentAction,
  deployedAt: Schema.Number,
  /** The token that did it, `start` for `foundry start --release`, `null` on a server open without tokens. */
  deployedBy: Schema.NullOr(Schema.String),
  /** The release that was current before, `null` for the first. */
  previous: Schema.NullOr(Schema.String),
  /** What it changed against `previous`. */
  summary: ReleaseSummary
})
export type DeploymentView = typeof DeploymentView.Type

/** The log's row: the summary kept as JSON. */
const DeploymentRow = Schema.Struct({ ...DeploymentView.fields, summary: Schema.parseJson(ReleaseSummary) })

/** A stored release's content: `release.json` as uploaded, and each bundled file in base64 by its path. */
export class ReleaseContent extends Schema.Class<ReleaseContent>("ReleaseContent")({
  id: Schema.String,
  manifest: Schema.String,
  files: Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.String }))
}) {}

/** A release made current: who did it when, what it changed, and its content when it is new to the store. */
export interface Activation {
  readonly id: string
  readonly action: DeploymentAction
  readonly deployedAt: number
  readonly deployedBy: string | null
  readonly summary: ReleaseSummary
  /**
   * The current release the change was decided against (none: no release yet); when another is
   * current by the time it commits (a deploy to another runner), nothing changes.
   */
  readonly expected?: Option.Option<string> | undefined
  readonly content?: {
    /** When `foundry build` made it. */
    readonly createdAt: number
    /** `release.json`. */
    readonly manifest: string
    /** Each bundled file in base64, by its path. */
    readonly files: Readonly<Record<string, string>>
  } | undefined
}

/** Release storage. */
export class ReleaseStorage extends Context.Tag("foundry/ReleaseStorage")<ReleaseStorage, {
  /**
   * Makes a release current in one transaction: stored when it is new (a release already kept is
   * not written again: its id is the hash of its files), its deploy time, author and summary
   * updated, the current row pointed at it, and the change added to the deployment log; false,
   * changing nothing, when the current release is no longer the `expected` one.
   */
  readonly activate: (activation: Activation) => Effect.Effect<boolean, StoreError>
  /** The deployment log, the latest `limit` entries, newest first. */
  readonly history: (limit: number) => Effect.Effect<ReadonlyArray<DeploymentView>, StoreError>
  /** The current release's id, when one was ever deployed. */
  readonly current: Effect.Effect<Option.Option<string>, StoreError>
  readonly content: (id: string) => Effect.Effect<Option.Option<ReleaseContent>, StoreError>
  /** Whether the store keeps release `id`. */
  readonly has: (id: string) => Effect.Effect<boolean, StoreError>
  /** Every release, the one deployed last first. */
  readonly list: Effect.Effect<ReadonlyArray<ReleaseEntry>, StoreError>
  /** Whether a run that started on release `id` has not ended (queued, running, or waiting while suspended). */
  readonly hasRunsGoingOn: (id: string) => Effect.Effect<boolean, StoreError>
}>() {}

const encodeSummary = Schema.encodeSync(Schema.parseJson(ReleaseSummary))

/** Release storage on the database's `SqlClient`. */
export const layer = Layer.effect(
  ReleaseStorage,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const contentOf = SqlSchema.findOne({
      Request: Schema.String,
      Result: ReleaseContent,
      execute: (id) => sql`SELECT id, manifest, files FROM foundry_releases WHERE id = ${id}`
    })
    const currentRow = SqlSchema.findOne({
      Request: Schema.Void,
      Result: Schema.Struct({ releaseId: Schema.String }),
      execute: () => sql`SELECT release_id FROM foundry_release_current WHERE name = 'current'`
    })
    const all = SqlSchema.findAll({
      Request: Schema.Void,
      Result: ReleaseEntry,
      execute: () =>
        sql`SELECT r.id, r.created_at, r.deployed_at, r.deployed_by, r.summary,
          (SELECT CAST(COUNT(*) AS INTEGER) FROM foundry_runs WHERE release = r.id) AS runs
          FROM foundry_releases r ORDER BY r.deployed_at DESC, r.id`
    })

    const log = SqlSchema.findAll({
      Request: Schema.Number,
      Result: DeploymentRow,
      execute: (limit) =>
        sql`SELECT seq, release_id AS release, action, deployed_at, deployed_by, previous, summary
          FROM foundry_deployments ORDER BY seq DESC LIMIT ${limit}`
    })

    return ReleaseStorage.of({
      activate: (activation) =>
        Effect.gen(function*() {
          const { action, content, deployedAt, deployedBy, id } = activation
          const summary = encodeSummary(activation.summary)
          const previous = yield* currentRow(undefined)
          // The switch first, conditional on the expected release in the statement itself, so that
          // of two deploys decided against one release (on PostgreSQL, at once) one switches.
          const expected = activation.expected
          const switched = expected === undefined
            ? yield* sql`INSERT INTO foundry_release_current (name, release_id, updated_at) VALUES ('current', ${id}, ${deployedAt})
                ON CONFLICT (name) DO UPDATE SET release_id = ${id}, updated_at = ${deployedAt} RETURNING name`
            : Option.isNone(expected)
            ? yield* sql`INSERT INTO foundry_release_current (name, release_id, updated_at) VALUES ('current', ${id}, ${deployedAt})
                ON CONFLICT (name) DO NOTHING RETURNING name`
            : yield* sql`UPDATE foundry_release_current SET release_id = ${id}, updated_at = ${deployedAt}
                WHERE name = 'current' AND release_id = ${expected.value} RETURNING name`
          if (switched.length === 0) return false
          if (content !== undefined) {
            yield* sql`INSERT INTO foundry_releases ${
              sql.insert({
                id,
                createdAt: content.createdAt,
                deployedAt,
                deployedBy,
                summary,
                manifest: content.manifest,
                files: JSON.stringify(content.files)
              })
            } ON CONFLICT (id) DO NOTHING`
          }
          yield* sql`UPDATE foundry_releases SET deployed_at = ${deployedAt}, deployed_by = ${deployedBy}, summary = ${summary}
            WHERE id = ${id}`
          yield* sql`INSERT INTO foundry_deployments ${
            sql.insert({
              releaseId: id,
              action,
              deployedAt,
              deployedBy,
              previous: Option.getOrNull(Option.map(previous, (row) => row.releaseId)),
              summary
            })
          }`
          return true
        }).pipe(sql.withTransaction, failAs("activateRelease")),

      history: (limit) => log(limit).pipe(failAs("deploymentLog")),

      current: currentRow(undefined).pipe(Effect.map(Option.map((row) => row.releaseId)), failAs("currentRelease")),

      content: (id) => contentOf(id).pipe(failAs("releaseContent")),

      has: (id) =>
        sql`SELECT 1 AS kept FROM foundry_releases WHERE id = ${id}`.pipe(Effect.map((rows) => rows.length > 0), failAs("hasRelease")),

      list: all(undefined).pipe(failAs("listReleases")),

      hasRunsGoingOn: (id) =>
        sql`SELECT 1 AS going FROM foundry_runs WHERE release = ${id} AND status IN ('queued', 'running', 'suspended') LIMIT 1`.pipe(
          Effect.map((rows) => rows.length > 0),
          failAs("runsOfRelease")
        )
    })
  })
)
