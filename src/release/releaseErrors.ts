/**
 * Why a server takes no release: the upload is not a release it can run, the release it is asked
 * to go back to is not kept, or the server serves sources and takes no deploys.
 */
import { Data, Schema } from "effect"

/** The upload is not a whole, intact release, or the release does not load; nothing was switched. */
export class ReleaseInvalid extends Schema.TaggedError<ReleaseInvalid>()("ReleaseInvalid", {
  message: Schema.String
}) {}

/** The server keeps no release with that id. */
export class ReleaseNotFound extends Schema.TaggedError<ReleaseNotFound>()("ReleaseNotFound", {
  release: Schema.String,
  message: Schema.String
}) {}

/** The server serves a project's sources (`foundry dev`, `foundry run`): releases are for `foundry start`. */
export class ReleasesNotDeployable extends Schema.TaggedError<ReleasesNotDeployable>()("ReleasesNotDeployable", {
  message: Schema.String
}) {}

/** Another deploy made another release current between a change's decision and its commit: it is decided again. */
export class CurrentMoved extends Data.TaggedError("CurrentMoved") {}

/**
 * Release `release` cannot be had as it is, and trying again will not change that: its files (the
 * store's copy, fetched again after the cached one did not match, or the folder the server started
 * on) are not the release its id names. A run that needs it is not kept waiting on it.
 */
export class ReleaseBroken extends Data.TaggedError("ReleaseBroken")<{
  readonly release: string
  readonly message: string
}> {}
