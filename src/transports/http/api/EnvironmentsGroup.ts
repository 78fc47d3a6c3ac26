/**
 * Working environments and artifacts, read-only: the files a run presented (listed, downloaded,
 * previewed), and an instance's environment at any stored version (its files and history, and a
 * file's bytes). Bytes are answered raw with their own media type, so those two endpoints declare a
 * binary success for the OpenAPI document and their handlers build the response themselves.
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { AgentNotFound, ConversationNotFound, RunNotFound } from "../../../dispatch/Dispatcher.js"
import { InstanceNotFound } from "../../../instances/instanceErrors.js"
import { ArtifactList, ArtifactPreview, EnvironmentView } from "./environmentViews.js"

/** No artifact has that id. */
export class ArtifactNotFound extends Schema.TaggedError<ArtifactNotFound>()("ArtifactNotFound", {
  artifactId: Schema.String,
  message: Schema.String
}) {}

/** The agent works without an environment, so its instances have no files. */
export class NoEnvironment extends Schema.TaggedError<NoEnvironment>()("NoEnvironment", {
  agent: Schema.String,
  message: Schema.String
}) {}

/** The scope has no version with that number. */
export class EnvironmentVersionNotFound extends Schema.TaggedError<EnvironmentVersionNotFound>()("EnvironmentVersionNotFound", {
  version: Schema.Number,
  head: Schema.Number,
  message: Schema.String
}) {}

/** The tree of that version holds no file at that path. */
export class EnvironmentFileNotFound extends Schema.TaggedError<EnvironmentFileNotFound>()("EnvironmentFileNotFound", {
  path: Schema.String,
  version: Schema.Number,
  message: Schema.String
}) {}

/** The tree the environment starts with cannot be read (its folder is missing or too large). */
export class InitialTreeUnreadable extends Schema.TaggedError<InitialTreeUnreadable>()("InitialTreeUnreadable", {
  environment: Schema.String,
  message: Schema.String
}) {}

/** Bytes, served with the file's own media type. */
const Bytes = HttpApiSchema.Uint8Array({ contentType: "application/octet-stream" })

const ArtifactPath = Schema.Struct({ id: Schema.String })

/**
 * Which tree: the instance's agent (optional when only one agent has an instance with that id);
 * for a per-conversation environment the conversation (default: the instance's latest); the
 * version (0: the tree the environment starts with; default: the latest).
 */
const scopeParams = {
  agent: Schema.optional(Schema.String),
  conversation: Schema.optional(Schema.String),
  version: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative()))
}

/** The environments group. */
export class EnvironmentsGroup extends HttpApiGroup.make("environments")
  .add(
    HttpApiEndpoint.get("artifacts", "/api/runs/:runId/artifacts")
      .setPath(Schema.Struct({ runId: Schema.String }))
      .addSuccess(ArtifactList)
      .addError(RunNotFound, { status: 404 })
  )
  .add(
    HttpApiEndpoint.get("artifact", "/api/artifacts/:id")
      .setPath(ArtifactPath)
      .addSuccess(Bytes)
      .addError(ArtifactNotFound, { status: 404 })
  )
  .add(
    HttpApiEndpoint.get("preview", "/api/artifacts/:id/preview")
      .setPath(ArtifactPath)
      .addSuccess(ArtifactPreview)
      .addError(ArtifactNotFound, { status: 404 })
  )
  .add(
    HttpApiEndpoint.get("environment", "/api/instances/:id/environment")
      .setPath(Schema.Struct({ id: Schema.String }))
      .setUrlParams(Schema.Struct(scopeParams))
      .addSuccess(EnvironmentView)
      .addError(InstanceNotFound, { status: 404 })
      .addError(AgentNotFound, { status: 404 })
      .addError(NoEnvironment, { status: 404 })
      .addError(ConversationNotFound, { status: 404 })
      .addError(EnvironmentVersionNotFound, { status: 404 })
      .addError(InitialTreeUnreadable, { status: 500 })
  )
  .add(
    HttpApiEndpoint.get("file", "/api/instances/:id/environment/file")
      .setPath(Schema.Struct({ id: Schema.String }))
      .setUrlParams(Schema.Struct({ ...scopeParams, path: Schema.String }))
      .addSuccess(Bytes)
      .addError(InstanceNotFound, { status: 404 })
      .addError(AgentNotFound, { status: 404 })
      .addError(NoEnvironment, { status: 404 })
      .addError(ConversationNotFound, { status: 404 })
      .addError(EnvironmentVersionNotFound, { status: 404 })
      .addError(EnvironmentFileNotFound, { status: 404 })
      .addError(InitialTreeUnreadable, { status: 500 })
  )
{}
