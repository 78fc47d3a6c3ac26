/**
 * `/api/releases`: the releases a server keeps, and `/api/deployments` the log of every time one
 * was made current (who, when, from which, what changed). Deploying one (`POST`, a `foundry build` release
 * as `release.json` and its files in base64) and going back to one (`activate`) switch the release
 * new runs start on; runs in flight finish on theirs. Changes need a token with the `deploy` scope.
 */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { ReleaseSwitch, ReleaseView } from "../../../release/Deployments.js"
import { DeploymentView } from "../../../release/ReleaseStorage.js"
import { ReleaseInvalid, ReleaseNotFound, ReleasesNotDeployable } from "../../../release/releaseErrors.js"
import { ReleaseUpload } from "../../../release/ReleaseUpload.js"

/** The releases group. */
export class ReleasesGroup extends HttpApiGroup.make("releases")
  .add(HttpApiEndpoint.get("list", "/api/releases").addSuccess(Schema.Array(ReleaseView)))
  .add(
    HttpApiEndpoint.get("history", "/api/deployments")
      .setUrlParams(Schema.Struct({ limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 1000))) }))
      .addSuccess(Schema.Array(DeploymentView))
  )
  .add(
    HttpApiEndpoint.post("deploy", "/api/releases")
      .setPayload(ReleaseUpload)
      .addSuccess(ReleaseSwitch)
      .addError(ReleaseInvalid, { status: 400 })
      .addError(ReleasesNotDeployable, { status: 409 })
  )
  .add(
    HttpApiEndpoint.post("activate", "/api/releases/:releaseId/activate")
      .setPath(Schema.Struct({ releaseId: Schema.String }))
      .addSuccess(ReleaseSwitch)
      .addError(ReleaseNotFound, { status: 404 })
      .addError(ReleaseInvalid, { status: 400 })
      .addError(ReleasesNotDeployable, { status: 409 })
  )
{}
