/**
 * The records of working environments as the store keeps them and the API shows them: versions of
 * a scope's tree and the artifacts runs present. Node-free, so the inspector can name them.
 */
import { Schema } from "effect"

/** Why a version was made. */
export const VersionKind = Schema.Literal("seed", "change", "checkpoint", "undo", "redo")
export type VersionKind = typeof VersionKind.Type

/** One stored state of a scope's tree, without its files. */
export const EnvironmentVersion = Schema.Struct({
  /** 1, 2, 3 ... per scope. */
  version: Schema.Number,
  kind: VersionKind,
  /** What made it, e.g. `write_file /inbox/a.csv` or `undo of 5`. */
  label: Schema.String,
  runId: Schema.NullOr(Schema.String),
  toolCallId: Schema.NullOr(Schema.String),
  createdAt: Schema.Number,
  files: Schema.Number,
  bytes: Schema.Number
})
export type EnvironmentVersion = typeof EnvironmentVersion.Type

/** A file a run presented, its bytes kept with the environments' blobs. */
export const Artifact = Schema.Struct({
  id: Schema.String,
  runId: Schema.String,
  agent: Schema.String,
  instanceId: Schema.String,
  conversationId: Schema.String,
  /** The `present` call that made it (`<runId>:<toolCallId>`), so a replayed call finds it. */
  toolCallId: Schema.NullOr(Schema.String),
  /** Where it was in the environment, e.g. `/out/report.xlsx`. */
  path: Schema.String,
  caption: Schema.NullOr(Schema.String),
  mediaType: Schema.String,
  size: Schema.Number,
  /** sha256 of the bytes, hex. */
  hash: Schema.String,
  createdAt: Schema.Number
})
export type Artifact = typeof Artifact.Type
