/**
 * The shapes the environment and artifact endpoints answer. Kept apart from the group (whose
 * handlers reach the store and Node's crypto) so that the inspector, built for the browser, can
 * name them.
 */
import { Schema, Struct } from "effect"
import { Artifact, EnvironmentVersion } from "../../../durable/environmentRecords.js"

/** A file a run presented, with where to download it. */
export const ArtifactView = Schema.Struct({
  ...Struct.omit(Artifact.fields, "hash", "toolCallId"),
  /** `GET` it for the bytes (`/api/artifacts/<id>`). */
  url: Schema.String
})
export type ArtifactView = typeof ArtifactView.Type

/** The answer to `GET /api/runs/:runId/artifacts`, in the order the run presented them. */
export const ArtifactList = Schema.Struct({ artifacts: Schema.Array(ArtifactView) })

/** How many rows, columns and bytes of text a preview holds at most. */
export const previewLimits = { rows: 50, columns: 20, textBytes: 20 * 1024, sheets: 10 } as const

/** A sheet of a table preview: its first rows as text; `truncated` when rows or columns were left out. */
export const PreviewSheet = Schema.Struct({
  name: Schema.String,
  rows: Schema.Array(Schema.Array(Schema.String)),
  truncated: Schema.Boolean
})

/**
 * What the inspector can show of an artifact without downloading it: the start of a text, the first
 * rows of each sheet (CSV, TSV, XLSX), an image (shown from its download URL), or nothing.
 */
export const ArtifactPreview = Schema.Union(
  Schema.Struct({ kind: Schema.Literal("text"), text: Schema.String, truncated: Schema.Boolean }),
  Schema.Struct({ kind: Schema.Literal("table"), sheets: Schema.Array(PreviewSheet) }),
  Schema.Struct({ kind: Schema.Literal("image"), mediaType: Schema.String }),
  Schema.Struct({ kind: Schema.Literal("none") })
)
export type ArtifactPreview = typeof ArtifactPreview.Type

/** A file of an environment's tree. */
export const EnvironmentFileView = Schema.Struct({
  path: Schema.String,
  size: Schema.Number,
  mediaType: Schema.String,
  /** Whether its download is served as `text/plain; charset=utf-8`. */
  text: Schema.Boolean
})
export type EnvironmentFileView = typeof EnvironmentFileView.Type

/** One stored version of a scope's tree. */
export const EnvironmentVersionView = EnvironmentVersion
export type EnvironmentVersionView = typeof EnvironmentVersionView.Type

/** Whose tree an environment keeps: each instance of the agent, or each conversation. */
export const EnvironmentPersistence = Schema.Literal("instance", "conversation")

/** The answer to `GET /api/instances/:id/environment`: one version of the tree, and the scope's history. */
export const EnvironmentView = Schema.Struct({
  agent: Schema.String,
  instance: Schema.String,
  /** The environment's route id. */
  environment: Schema.String,
  persistence: EnvironmentPersistence,
  /** The conversation whose tree this is, for a per-conversation environment. */
  conversation: Schema.NullOr(Schema.String),
  /** The scope's key in the store, e.g. `instance:<agent>/<id>`. */
  scope: Schema.String,
  /** The version shown; 0 is the tree the environment starts with, before any change. */
  version: Schema.Number,
  /** The scope's latest version (0: none yet). */
  head: Schema.Number,
  files: Schema.Array(EnvironmentFileView),
  /** Newest first, at most 100. */
  history: Schema.Array(EnvironmentVersionView)
})
export type EnvironmentView = typeof EnvironmentView.Type
